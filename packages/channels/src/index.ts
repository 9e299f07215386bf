export * from "./adapter.js";
export * from "./adapters.js";
export * from "./capabilities.js";
export * from "./registry.js";
export type { SandboxOptions } from "./sandbox/adapter.js";
export { parseTriggers, type SandboxTriggers } from "./sandbox/triggers.js";
