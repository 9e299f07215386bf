/**
 * Sandbox triggers: tokens in a test message's text that ask for an outcome, like
 * Stripe's test card numbers. Documented in docs/sandbox.md.
 */
export interface SandboxTriggers {
  /** `[sandbox:fail]` or `[sandbox:fail=CODE]`: refused at once. */
  fail?: string;
  /** `[sandbox:fail-after-sent=CODE]`: accepted, then a failure receipt. */
  failAfterSent?: string;
  /** `[sandbox:read]`: delivered (where the channel reports it), then read, on channels with read receipts. */
  read: boolean;
  /** `[sandbox:no-receipts]`: stops at `sent`. */
  noReceipts: boolean;
  /** `[sandbox:slow=MS]`: the provider takes this long to accept (at most 10 s). */
  slowMs?: number;
  /** `[sandbox:temporary-error=N]`: the first N attempts hit a temporary fault, then it goes through. */
  temporaryErrors?: number;
}

const TOKEN = /\[sandbox:([a-z-]+)(?:=([^\]\s]+))?\]/g;
export const MAX_SLOW_MS = 10_000;
export const DEFAULT_FAILURE_CODE = "131026";

export function parseTriggers(text: string | null): SandboxTriggers {
  const triggers: SandboxTriggers = { read: false, noReceipts: false };
  for (const [, name, value] of (text ?? "").matchAll(TOKEN)) {
    switch (name) {
      case "fail":
        triggers.fail = value ?? DEFAULT_FAILURE_CODE;
        break;
      case "fail-after-sent":
        triggers.failAfterSent = value ?? DEFAULT_FAILURE_CODE;
        break;
      case "read":
        triggers.read = true;
        break;
      case "no-receipts":
        triggers.noReceipts = true;
        break;
      case "slow":
        triggers.slowMs = Math.min(MAX_SLOW_MS, Math.max(0, Number(value) || 0));
        break;
      case "temporary-error":
        triggers.temporaryErrors = Math.max(1, Number(value) || 1);
        break;
    }
  }
  return triggers;
}
