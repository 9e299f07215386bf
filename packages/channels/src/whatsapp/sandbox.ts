import { whatsappSessionWindow } from "../meta/session-window.js";
import { createSandboxAdapter, type SandboxOptions } from "../sandbox/adapter.js";
import { whatsapp } from "./definition.js";

/** The window rule is the live adapter's too (`meta/session-window.ts`): 131047 outside it. */
export function whatsappSandbox(options: SandboxOptions) {
  return createSandboxAdapter(whatsapp, options, [whatsappSessionWindow]);
}
