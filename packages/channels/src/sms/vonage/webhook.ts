import { decodeJwt } from "jose";
import { storableText } from "../../storable-text.js";
import { problemCode, problemMessage, problemOf } from "./errors.js";
import { fromVonageNumber } from "./numbers.js";

/**
 * The Messages API's two webhooks for SMS, normalised. Tolerant by design, like Meta's
 * parser: Vonage adds fields over time, so anything unrecognised (another channel, a status
 * Parley has no word for) is null, and nothing here throws.
 *
 * Inbound message (SMS): `{"channel":"sms","message_type":"text","message_uuid","to","from",
 * "text","timestamp","sms":{"num_messages","keyword"},"usage":{...}}`.
 * Message status: `{"message_uuid","to","from","timestamp","status","channel":"sms",
 * "client_ref","error":{"type","title","detail","instance"},"usage":{...},"sms":{"count_total"}}`
 * with `status` one of `submitted`, `delivered`, `rejected`, `undeliverable` (and `read`,
 * which SMS never reports).
 */

export type VonageDeliveryStatus = "sent" | "delivered" | "read" | "failed";

export type VonageWebhookItem =
  | {
      kind: "message";
      providerMessageId: string;
      /** The customer, E.164 (`+447700900001`). */
      from: string;
      /** The channel's number, E.164; a short code as Vonage writes it. */
      to: string;
      text: string;
      timestamp: Date;
      /** Vonage's `sms.keyword`: the first word, upper-cased (`STOP`). */
      keyword: string | null;
    }
  | {
      kind: "status";
      providerMessageId: string;
      /** The `client_ref` the send carried: Parley's message id. */
      clientRef: string | null;
      status: VonageDeliveryStatus;
      /** Vonage's own word (`submitted`, `rejected`, `undeliverable`...). */
      providerStatus: string;
      /** For `failed`: Vonage's code and words, untranslated. */
      error: { code: string; message: string } | null;
      /** The recipient, E.164. */
      to: string;
      /** The channel's sender: E.164 for a number, else the short code or sender id. */
      from: string;
      timestamp: Date;
    };

const STATUSES: Readonly<Record<string, VonageDeliveryStatus>> = {
  submitted: "sent",
  delivered: "delivered",
  read: "read",
  rejected: "failed",
  undeliverable: "failed",
};

/**
 * One webhook's item, or null when it is not an SMS message or status Parley understands.
 * `receivedAt` stands in for a timestamp Vonage left out or wrote unreadably.
 */
export function parseVonageWebhook(body: unknown, receivedAt: Date = new Date()): VonageWebhookItem | null {
  const record = recordOf(body);
  const providerMessageId = textOf(record?.message_uuid);
  if (!record || !providerMessageId) return null;
  if (record.channel !== undefined && record.channel !== "sms") return null;
  const timestamp = dateOf(record.timestamp) ?? receivedAt;
  const to = textOf(record.to);
  const from = textOf(record.from);
  if (!to || !from) return null;

  if (record.status !== undefined) {
    const providerStatus = textOf(record.status);
    const status = providerStatus ? STATUSES[providerStatus] : undefined;
    if (!providerStatus || !status) return null;
    return {
      kind: "status",
      providerMessageId,
      clientRef: textOf(record.client_ref),
      status,
      providerStatus,
      error: status === "failed" ? failureOf(record.error, providerStatus) : null,
      to: fromVonageNumber(to),
      from: fromVonageNumber(from),
      timestamp,
    };
  }

  if (record.channel !== "sms" || (record.message_type !== undefined && record.message_type !== "text")) return null;
  return {
    kind: "message",
    providerMessageId,
    from: fromVonageNumber(from),
    to: fromVonageNumber(to),
    text: storableText(typeof record.text === "string" ? record.text : ""),
    timestamp,
    keyword: textOf(recordOf(record.sms)?.keyword),
  };
}

/**
 * What names the channel a webhook is for, read before its signature is checked (to find the
 * signature secret to check it with): the channel's own number (`to` of an inbound message,
 * `from` of a status) as Vonage writes it, and the `application_id` claim of the unverified
 * token. Neither is trusted until `verifyVonageSignature` passes.
 */
export function vonageWebhookHints(
  body: unknown,
  authorization: string | undefined,
): { number: string | null; applicationId: string | null } {
  const record = recordOf(body);
  const number = textOf(record?.status === undefined ? record?.to : record?.from);
  return { number, applicationId: unverifiedApplicationId(authorization) };
}

function unverifiedApplicationId(authorization: string | undefined): string | null {
  const token = authorization?.trim().replace(/^Bearer +/i, "");
  if (!token) return null;
  try {
    const claim = decodeJwt(token).application_id;
    return typeof claim === "string" ? claim : null;
  } catch {
    return null;
  }
}

/** Vonage's error of a failed status; its status word when it sent none. */
function failureOf(error: unknown, providerStatus: string): { code: string; message: string } {
  const problem = problemOf(error);
  const code = problem ? problemCode(problem) : null;
  const message = problem ? problemMessage(problem) : null;
  return {
    code: code ?? providerStatus,
    message: message ?? `Vonage reported the message ${providerStatus}`,
  };
}

function recordOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function textOf(value: unknown): string | null {
  return typeof value === "string" && value.length > 0 ? value : null;
}

function dateOf(value: unknown): Date | null {
  if (typeof value !== "string") return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}
