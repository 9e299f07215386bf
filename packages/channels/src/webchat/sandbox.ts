import { createSandboxAdapter, type SandboxOptions } from "../sandbox/adapter.js";
import { webchat } from "./definition.js";

export function webchatSandbox(options: SandboxOptions) {
  return createSandboxAdapter(webchat, options);
}
