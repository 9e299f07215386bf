/**
 * Twilio's Programmable Messaging webhooks, form-encoded and already decoded: an incoming
 * message (https://www.twilio.com/docs/messaging/guides/webhook-request) or an outbound
 * message's status callback
 * (https://www.twilio.com/docs/messaging/guides/outbound-message-status-in-status-callbacks).
 * Tolerant by design: Twilio adds parameters without notice, so unknown ones are ignored,
 * and nothing here throws. Verify the signature (`verifyTwilioSignature`) before trusting it.
 */

import { storableText } from "../../storable-text.js";
import { type SmsOptOutKeyword, smsOptOutKeyword } from "../opt-out-keywords.js";
import type { TwilioParams } from "./signature.js";

export interface TwilioInboundMedia {
  /** `MediaUrlN`: on Twilio's API host, may need the account's credentials (`fetchMedia`). */
  url: string;
  /** `MediaContentTypeN`. */
  contentType: string | null;
}

/** Twilio's Advanced Opt-Out verdict on an incoming message. */
export type TwilioOptOutType = "STOP" | "START" | "HELP";

/** A Twilio message status as Parley records it. */
export type TwilioParleyStatus = "sent" | "delivered" | "read" | "failed";

export type TwilioWebhookEvent =
  | {
      kind: "inbound";
      accountSid: string;
      /** Set when the number belongs to a Messaging Service. */
      messagingServiceSid: string | null;
      messageSid: string;
      /** The sender, E.164. */
      from: string;
      /** Your Twilio number (or short code) it was sent to. */
      to: string;
      body: string;
      media: TwilioInboundMedia[];
      /** Twilio's `OptOutType`, when Advanced Opt-Out matched a keyword. */
      optOutType: TwilioOptOutType | null;
      /** `smsOptOutKeyword(body, optOutType)`: whether this text opts the sender out or back in. */
      optOut: SmsOptOutKeyword | null;
    }
  | {
      kind: "status";
      accountSid: string;
      messageSid: string;
      /** Twilio's `MessageStatus`, untranslated. */
      twilioStatus: string;
      status: TwilioParleyStatus;
      /** Twilio's `ErrorCode` (`30007`), untranslated; null when none came. */
      errorCode: string | null;
      /** The message's error for a `failed` status. */
      error: { code: string; message: string } | null;
    }
  /** A request Parley has nothing to do with: an interim status (`queued`, `sending`...), or no message at all. */
  | { kind: "ignored"; reason: string; accountSid: string | null; messageSid: string | null };

/**
 * Twilio statuses and what Parley records; the others (`queued`, `accepted`, `scheduled`,
 * `sending`, `canceled`, `partially_delivered`, `receiving`, `received`) change nothing.
 * `undelivered` (the carrier could not deliver) and `failed` (never sent) both fail the
 * message, with Twilio's `ErrorCode`.
 */
const STATUSES: Readonly<Record<string, TwilioParleyStatus>> = {
  sent: "sent",
  delivered: "delivered",
  read: "read",
  undelivered: "failed",
  failed: "failed",
};

const OPT_OUT_TYPES: ReadonlySet<string> = new Set(["STOP", "START", "HELP"]);

/** Twilio sends at most 10 media files with a message. */
const MAX_MEDIA = 10;

export function parseTwilioWebhook(params: TwilioParams): TwilioWebhookEvent {
  const accountSid = field(params, "AccountSid");
  const messageSid = field(params, "MessageSid") ?? field(params, "SmsMessageSid") ?? field(params, "SmsSid");
  if (!accountSid || !messageSid) {
    return { kind: "ignored", reason: "not a Twilio message webhook", accountSid, messageSid };
  }
  const twilioStatus = field(params, "MessageStatus") ?? field(params, "SmsStatus");
  const incoming =
    twilioStatus === "received" ||
    twilioStatus === "receiving" ||
    (twilioStatus === null && (params.Body !== undefined || params.NumMedia !== undefined));
  if (incoming) return inbound(params, accountSid, messageSid);
  if (twilioStatus === null) return { kind: "ignored", reason: "no MessageStatus", accountSid, messageSid };
  const status = STATUSES[twilioStatus];
  if (!status) return { kind: "ignored", reason: `status ${twilioStatus}`, accountSid, messageSid };
  const errorCode = field(params, "ErrorCode");
  return {
    kind: "status",
    accountSid,
    messageSid,
    twilioStatus,
    status,
    errorCode,
    error: status === "failed" ? statusError(twilioStatus, errorCode) : null,
  };
}

function inbound(params: TwilioParams, accountSid: string, messageSid: string): TwilioWebhookEvent {
  const from = field(params, "From");
  const to = field(params, "To");
  if (!from || !to)
    return { kind: "ignored", reason: "an incoming message without From or To", accountSid, messageSid };
  const body = storableText(field(params, "Body", { keepEmpty: true }) ?? "");
  const declared = field(params, "OptOutType")?.toUpperCase() ?? null;
  const optOutType = declared !== null && OPT_OUT_TYPES.has(declared) ? (declared as TwilioOptOutType) : null;
  return {
    kind: "inbound",
    accountSid,
    messagingServiceSid: field(params, "MessagingServiceSid"),
    messageSid,
    from,
    to,
    body,
    media: mediaOf(params),
    optOutType,
    optOut: smsOptOutKeyword(body, optOutType),
  };
}

/** `MediaUrl0..N-1` with `MediaContentType0..N-1`, N being `NumMedia` (or as many as are present). */
function mediaOf(params: TwilioParams): TwilioInboundMedia[] {
  const declared = Number(field(params, "NumMedia"));
  const count = Number.isInteger(declared) && declared >= 0 ? Math.min(declared, MAX_MEDIA) : MAX_MEDIA;
  const media: TwilioInboundMedia[] = [];
  for (let index = 0; index < count; index++) {
    const url = field(params, `MediaUrl${index}`);
    if (!url) continue;
    media.push({ url, contentType: field(params, `MediaContentType${index}`) });
  }
  return media;
}

/** Twilio's code as the message's error; its meaning is at https://www.twilio.com/docs/api/errors/{code}. */
function statusError(twilioStatus: string, errorCode: string | null): { code: string; message: string } {
  if (errorCode === null) return { code: twilioStatus, message: `Twilio reported the message ${twilioStatus}` };
  return {
    code: errorCode,
    message: `Twilio reported the message ${twilioStatus} with error ${errorCode} (https://www.twilio.com/docs/api/errors/${encodeURIComponent(errorCode)})`,
  };
}

/** A parameter's (first) value, trimmed; null when absent or empty (unless `keepEmpty`). */
function field(params: TwilioParams, name: string, options: { keepEmpty?: boolean } = {}): string | null {
  const raw = params[name];
  const value = typeof raw === "string" ? raw : raw?.[0];
  if (value === undefined) return null;
  if (options.keepEmpty) return value;
  const trimmed = value.trim();
  return trimmed.length > 0 ? trimmed : null;
}
