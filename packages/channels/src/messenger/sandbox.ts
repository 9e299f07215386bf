import { createSandboxAdapter, type SandboxOptions } from "../sandbox/adapter.js";
import { messenger } from "./definition.js";

/**
 * The sandbox applies WhatsApp's window only (decisions.md): a Messenger sandbox send
 * reaches `delivered` without the contact writing first. The live adapter enforces the
 * 24-hour window (`meta/session-window.ts`).
 */
export function messengerSandbox(options: SandboxOptions) {
  return createSandboxAdapter(messenger, options);
}
