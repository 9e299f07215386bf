export * from "./config-problems.js";
export * from "./listen.js";
export * from "./run-startup.js";
