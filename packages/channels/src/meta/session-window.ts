import type { SendRule } from "../adapter.js";
import type { ChannelDefinition } from "../capabilities.js";
import { instagram } from "../instagram/definition.js";
import { messenger } from "../messenger/definition.js";
import { providerError } from "../sandbox/provider-errors.js";
import { whatsapp } from "../whatsapp/definition.js";

const HOUR_MS = 3_600_000;

/**
 * Meta's refusal of a Messenger or Instagram message outside the standard messaging window
 * (code 10, subcode 2018278), in Meta's words.
 * See https://developers.facebook.com/docs/messenger-platform/policy/policy-overview/
 */
export const OUTSIDE_ALLOWED_WINDOW = providerError("10");

/**
 * The channel's session window (`sessionWindowHours`): a free-form message is only allowed
 * that long after the contact's last message on the channel. Outside it the message fails
 * with `refusal`, without reaching the provider. No rule for channels without a window.
 */
export function sessionWindowRule(definition: ChannelDefinition, refusal: { code: string; message: string }): SendRule {
  const hours = definition.capabilities.sessionWindowHours;
  if (hours === null) return () => undefined;
  const windowMs = hours * HOUR_MS;
  return (message, now) => {
    const open = message.lastInboundAt !== null && now.getTime() - message.lastInboundAt.getTime() <= windowMs;
    return open ? undefined : { outcome: "failed", error: { ...refusal } };
  };
}

/**
 * WhatsApp's customer service window: the Cloud API accepts such a message, then reports
 * it failed with 131047 (re-engagement message). Checked locally, it fails the same way at once.
 */
export const whatsappSessionWindow = sessionWindowRule(whatsapp, providerError("131047"));
export const messengerSessionWindow = sessionWindowRule(messenger, OUTSIDE_ALLOWED_WINDOW);
export const instagramSessionWindow = sessionWindowRule(instagram, OUTSIDE_ALLOWED_WINDOW);
