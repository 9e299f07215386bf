import type { SendResult } from "../adapter.js";
import { createSandboxAdapter, type SandboxOptions, type SandboxRule } from "../sandbox/adapter.js";
import { providerError } from "../sandbox/provider-errors.js";
import { whatsapp } from "./definition.js";

const HOUR_MS = 3_600_000;

/**
 * WhatsApp's customer service window: a free-form message more than 24 hours after the
 * customer's last message is accepted by the API and then fails with 131047.
 */
export const whatsappSessionWindow: SandboxRule = (message, now): SendResult | undefined => {
  const windowMs = (whatsapp.capabilities.sessionWindowHours ?? 0) * HOUR_MS;
  const open = message.lastInboundAt !== null && now.getTime() - message.lastInboundAt.getTime() <= windowMs;
  return open ? undefined : { outcome: "failed", error: providerError("131047") };
};

export function whatsappSandbox(options: SandboxOptions) {
  return createSandboxAdapter(whatsapp, options, [whatsappSessionWindow]);
}
