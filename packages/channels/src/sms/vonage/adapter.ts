import type { ChannelAdapter, OutboundMessage, SendResult } from "../../adapter.js";
import { createVonageClient, type VonageOptions } from "./client.js";
import { VONAGE_UNAUTHORIZED, VonageApiError, VonageAuthError } from "./errors.js";
import { VonageKeyError } from "./jwt.js";
import { toVonageNumber } from "./numbers.js";
import {
  settingsProblem,
  VONAGE_US_LONG_NUMBER_MESSAGES_PER_SECOND,
  vonagePace,
  vonageSmsSettings,
} from "./settings.js";

/** The Messages API takes 1 to 1,000 characters of `text` for SMS (counted here as UTF-16 code units). */
export const VONAGE_SMS_MAX_TEXT = 1000;

/**
 * Vonage Messages API, SMS: `POST /v1/messages` with `{"message_type":"text","channel":"sms",
 * "to","from","text","client_ref"}`, Parley's message id as `client_ref` (it comes back on every
 * status callback). Text only: Vonage's MMS is a separate channel (`mms`) from US numbers only,
 * left for a later round. Receipts come later by webhook, so a send returns none.
 *
 * Refusals are `failed` results with Vonage's code untranslated (`1120`); refused credentials
 * (HTTP 401) are code `unauthorized` (see `isVonageCredentialRefusal`), after which the channel
 * needs attention; temporary faults (429, 5xx, timeouts) throw `TemporaryChannelError`.
 *
 * `channelSettings`, the channel's stored settings, set `messagesPerSecond` (`vonagePace`);
 * each send reads the settings of its own message.
 */
export function vonageSmsAdapter(options: VonageOptions, channelSettings?: unknown): ChannelAdapter {
  const paced = vonageSmsSettings.safeParse(channelSettings);
  return {
    // Unknown settings get the slowest pace Vonage documents (a US long number's); the send then fails on them anyway.
    messagesPerSecond: paced.success ? vonagePace(paced.data) : VONAGE_US_LONG_NUMBER_MESSAGES_PER_SECOND,
    send: (message) => send(options, message),
  };
}

/**
 * Whether a send's error says the channel's Vonage credentials no longer work: what marks the
 * channel `needs_attention`, as Meta's code 190 does (packages/core `noteProviderRefusal`).
 */
export function isVonageCredentialRefusal(error: { code: string }): boolean {
  return error.code === VONAGE_UNAUTHORIZED;
}

async function send(options: VonageOptions, message: OutboundMessage): Promise<SendResult> {
  const settings = vonageSmsSettings.safeParse(message.channel.settings);
  if (!settings.success) return failed("channel_misconfigured", settingsProblem(settings.error));
  if (!message.recipient) return failed("recipient_unknown", "The contact has no phone number");
  const to = toVonageNumber(message.recipient);
  if (!to)
    return failed(
      "recipient_invalid",
      "The contact's phone number is not an international number (+ and country code)",
    );
  if (message.type !== "text") {
    return failed("unsupported_message_type", `SMS through Vonage carries text only, not ${message.type}`);
  }
  const text = message.text ?? "";
  if (text.length === 0) return failed("text_missing", "An SMS needs text");
  if (text.length > VONAGE_SMS_MAX_TEXT) {
    return failed("text_too_long", `Vonage takes at most ${VONAGE_SMS_MAX_TEXT} characters of SMS text`);
  }

  const client = createVonageClient(options, {
    applicationId: settings.data.application_id,
    privateKey: settings.data.private_key,
  });
  try {
    const uuid = await client.sendSms({ to, from: settings.data.from, text, clientRef: message.id });
    return { outcome: "sent", providerMessageId: uuid, receipts: [] };
  } catch (error) {
    if (error instanceof VonageAuthError) {
      return failed(
        VONAGE_UNAUTHORIZED,
        `Vonage refused the application's credentials (HTTP 401): ${error.message}. Check application_id and private_key, then update the channel.`,
      );
    }
    // Refusals become the message's error; a TemporaryChannelError goes up to be retried.
    if (error instanceof VonageApiError) return { outcome: "failed", error: error.toProviderError() };
    if (error instanceof VonageKeyError) return failed("channel_misconfigured", error.message);
    throw error;
  }
}

function failed(code: string, message: string): SendResult {
  return { outcome: "failed", error: { code, message } };
}
