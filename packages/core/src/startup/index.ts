export * from "./config-problems.js";
export * from "./heap-growth.js";
export * from "./listen.js";
export * from "./run-startup.js";
export * from "./stop-signals.js";
