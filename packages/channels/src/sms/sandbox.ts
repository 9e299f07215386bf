import { createSandboxAdapter, type SandboxOptions } from "../sandbox/adapter.js";
import { sms } from "./definition.js";

/**
 * Held to the live rules: `delivered`, never `read`. An opted-out contact's message never
 * reaches it (the worker fails it with 21610, as for a live provider, smsOptOutRefusal);
 * the length and the address are checked at send, before anything is stored.
 */
export function smsSandbox(options: SandboxOptions) {
  return createSandboxAdapter(sms, options);
}
