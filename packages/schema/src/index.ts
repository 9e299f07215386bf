export * from "./catalogue.js";
export * from "./errors.js";
export * from "./openapi.js";
export * from "./operation.js";
export * from "./primitives.js";
export * from "./reference.js";
export * from "./resources/index.js";
export * from "./scopes.js";
