export * from "./capabilities.js";
export * from "./registry.js";
