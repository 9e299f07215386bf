import { parsePhoneNumberFromString } from "libphonenumber-js";
import type { z } from "zod";
import type { ChannelAdapter, OutboundMessage, SendResult } from "../../adapter.js";
import { createTwilioClient, type SendMessageInput, type TwilioOptions } from "./client.js";
import { TwilioApiError } from "./errors.js";
import { twilioPace, twilioSmsSettings } from "./settings.js";

export interface TwilioAdapterOptions {
  twilio: TwilioOptions;
  /** Parley's public base URL (`PUBLIC_BASE_URL`): Twilio POSTs status callbacks below it. */
  publicBaseUrl: string;
}

/** Where Twilio POSTs incoming messages and status callbacks, below the public base URL. */
export const TWILIO_WEBHOOK_PATH = "/v1/channels/webhooks/twilio";

export function twilioWebhookUrl(publicBaseUrl: string): string {
  return `${publicBaseUrl.replace(/\/+$/, "")}${TWILIO_WEBHOOK_PATH}`;
}

/**
 * Twilio Programmable Messaging: `POST /2010-04-01/Accounts/{AccountSid}/Messages.json` with
 * the text, and an image's signed public URL as `MediaUrl` when the channel has `mms`
 * (Twilio fetches the file itself). Receipts come later to the status callback, so a send
 * returns none. Twilio's refusals are `failed` results with its code untranslated
 * (`"21610"`); refused credentials are code `"20003"` (see `isTwilioCredentialRefusal`), the
 * channel then needs attention; temporary faults throw `TemporaryChannelError`.
 *
 * `channelSettings`, the channel's stored settings, set `messagesPerSecond` (`twilioPace`);
 * each send reads the settings of its own message.
 */
export function twilioSmsAdapter(options: TwilioAdapterOptions, channelSettings?: unknown): ChannelAdapter {
  const paced = twilioSmsSettings.safeParse(channelSettings);
  return {
    // Unknown settings get the slowest pace Twilio has (a long code's); the send then fails on them anyway.
    messagesPerSecond: paced.success ? twilioPace(paced.data) : 1,
    send: (message) => send(options, message),
  };
}

async function send(options: TwilioAdapterOptions, message: OutboundMessage): Promise<SendResult> {
  const settings = twilioSmsSettings.safeParse(message.channel.settings);
  if (!settings.success) return failed("channel_misconfigured", settingsProblem(settings.error));
  if (!message.recipient) return failed("recipient_unknown", "The contact has no phone number");
  const to = e164(message.recipient);
  if (!to) return failed("recipient_invalid", "The contact's phone number is not a number in E.164 form");
  const content = contentOf(message, settings.data.mms === true);
  if ("error" in content) return { outcome: "failed", error: content.error };
  try {
    const client = createTwilioClient(options.twilio, settings.data);
    const sent = await client.sendMessage({ to, ...content, statusCallback: twilioWebhookUrl(options.publicBaseUrl) });
    return { outcome: "sent", providerMessageId: sent.sid, receipts: [] };
  } catch (error) {
    // Refusals (credentials included) become the message's error; a TemporaryChannelError goes up to be retried.
    if (error instanceof TwilioApiError) return { outcome: "failed", error: error.toProviderError() };
    throw error;
  }
}

type Content = Pick<SendMessageInput, "body" | "mediaUrls">;

/** Text, or (with `mms`) an image with its caption; SMS carries nothing else. */
function contentOf(message: OutboundMessage, mms: boolean): Content | { error: { code: string; message: string } } {
  if (message.type === "text") return { body: message.text ?? "" };
  if (message.type !== "image" || !mms) {
    const why = message.type === "image" ? " without mms=true in the channel's settings" : "";
    return {
      error: { code: "unsupported_message_type", message: `SMS through Twilio cannot carry ${message.type}${why}` },
    };
  }
  if (!message.attachment) return { error: { code: "attachment_missing", message: "The image message has no file" } };
  return { body: message.text, mediaUrls: [message.attachment.publicUrl] };
}

/** The recipient in E.164 (`+14155550100`), whatever spacing it was stored with; null when it is not one. */
function e164(recipient: string): string | null {
  const number = recipient.trim().startsWith("+") ? parsePhoneNumberFromString(recipient.trim()) : undefined;
  return number?.isPossible() ? number.number : null;
}

function failed(code: string, message: string): SendResult {
  return { outcome: "failed", error: { code, message } };
}

/** Which settings are wrong, by name; never their values (some are secrets). */
function settingsProblem(error: z.ZodError): string {
  const problems = error.issues.map((issue) => `${issue.path.join(".") || "settings"}: ${issue.message}`);
  return `The channel's settings are invalid (${problems.join("; ")})`;
}
