import { createSandboxAdapter, type SandboxOptions } from "../sandbox/adapter.js";
import { messenger } from "./definition.js";

export function messengerSandbox(options: SandboxOptions) {
  return createSandboxAdapter(messenger, options);
}
