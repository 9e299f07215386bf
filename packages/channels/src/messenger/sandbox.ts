import { messengerSessionWindow } from "../meta/session-window.js";
import { createSandboxAdapter, type SandboxOptions } from "../sandbox/adapter.js";
import { messenger } from "./definition.js";

/**
 * The sandbox fails where live fails: the live adapter's own window rule
 * (`meta/session-window.ts`), Meta's code 10 outside the 24 hours after the contact's last message.
 */
export function messengerSandbox(options: SandboxOptions) {
  return createSandboxAdapter(messenger, options, [messengerSessionWindow]);
}
