import { createSandboxAdapter, type SandboxOptions } from "../sandbox/adapter.js";
import { instagram } from "./definition.js";

export function instagramSandbox(options: SandboxOptions) {
  return createSandboxAdapter(instagram, options);
}
