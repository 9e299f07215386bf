import { createSandboxAdapter, type SandboxOptions } from "../sandbox/adapter.js";
import { email } from "./definition.js";

export function emailSandbox(options: SandboxOptions) {
  return createSandboxAdapter(email, options);
}
