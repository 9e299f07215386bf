import { setTimeout as sleep } from "node:timers/promises";
import type { ChannelAdapter, Receipt, SendRule } from "../adapter.js";
import { TemporaryChannelError } from "../adapter.js";
import type { ChannelDefinition } from "../capabilities.js";
import { providerError } from "./provider-errors.js";
import { parseTriggers } from "./triggers.js";

export interface SandboxOptions {
  /** After acceptance, when `delivered` arrives on channels with delivery receipts. */
  deliveryDelayMs: number;
  /** After `delivered`, when `read` arrives for `[sandbox:read]`. */
  readDelayMs: number;
}

/** A rule of the real platform that the sandbox enforces before accepting. */
export type SandboxRule = SendRule;

/**
 * The test environment's adapter: sends to nobody. It accepts, then reports what the
 * channel would: `delivered` where the channel declares delivery receipts, and the
 * outcomes the message's sandbox triggers ask for.
 */
export function createSandboxAdapter(
  definition: ChannelDefinition,
  options: SandboxOptions,
  rules: SandboxRule[] = [],
): ChannelAdapter {
  return {
    async send(message) {
      const triggers = parseTriggers(message.text);
      if (triggers.temporaryErrors !== undefined && message.attempt <= triggers.temporaryErrors) {
        throw new TemporaryChannelError(`sandbox temporary fault on attempt ${message.attempt}`);
      }
      if (triggers.slowMs) await sleep(triggers.slowMs);
      for (const rule of rules) {
        const refused = rule(message, new Date());
        if (refused) return refused;
      }
      if (triggers.fail) return { outcome: "failed", error: providerError(triggers.fail) };
      return {
        outcome: "sent",
        providerMessageId: `sandbox_${message.id}`,
        receipts: receiptsFor(definition, triggers, options),
      };
    },
  };
}

function receiptsFor(
  definition: ChannelDefinition,
  triggers: ReturnType<typeof parseTriggers>,
  options: SandboxOptions,
): Receipt[] {
  if (triggers.failAfterSent) {
    return [{ status: "failed", afterMs: options.deliveryDelayMs, error: providerError(triggers.failAfterSent) }];
  }
  if (triggers.noReceipts) return [];
  const { deliveryReceipts, readReceipts } = definition.capabilities;
  // Each receipt only where the channel reports it: Instagram reports reading, not arrival.
  const receipts: Receipt[] = deliveryReceipts ? [{ status: "delivered", afterMs: options.deliveryDelayMs }] : [];
  if (triggers.read && readReceipts) {
    receipts.push({ status: "read", afterMs: options.deliveryDelayMs + options.readDelayMs });
  }
  return receipts;
}
