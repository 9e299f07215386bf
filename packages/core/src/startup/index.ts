export * from "./config-problems.js";
export * from "./run-startup.js";
