import { countSegments, normalizePhone, smsSettingsOf, smsTextLimit } from "@parley/channels";
import type { MessageType, SmsSegments } from "@parley/schema";
import { validationError } from "../http/api-error.js";
import type { SendTarget } from "./queries.js";

/**
 * The rules of a send on an SMS channel, checked before anything is stored, sandbox and
 * live alike: the contact must have a number to text (the one they wrote from, else their
 * `phone` read with the channel's default region), and the text must fit the provider's
 * limit. Returns how carriers will count a text (null for MMS: one message, not segments).
 */
export function checkSmsSend(target: SendTarget, type: Exclude<MessageType, "template">, text: string | undefined) {
  if (!smsAddressOf(target)) {
    throw validationError(
      "conversation_id",
      "the conversation's contact has no phone number to text: set the contact's `phone` (E.164 such as +14155550100, or a number of the channel's default region)",
    );
  }
  const limit = smsTextLimit(target.channelProvider ?? "sandbox");
  if (text !== undefined && text.length > limit) {
    throw validationError("text", `is ${text.length} characters; an SMS on this channel takes at most ${limit}`);
  }
  return type === "text" && text !== undefined ? smsSegmentsOf(text) : null;
}

/** Where an SMS of this conversation goes: the number the contact wrote from, else their phone in E.164. */
function smsAddressOf(target: SendTarget): string | null {
  if (target.recipient) return target.recipient;
  if (!target.contactPhone) return null;
  return normalizePhone(target.contactPhone, smsSettingsOf(target.channelSettings).default_region);
}

function smsSegmentsOf(text: string): SmsSegments {
  const { segments, encoding } = countSegments(text);
  return { segments, encoding };
}
