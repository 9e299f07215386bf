/**
 * Meta's webhook payloads (WhatsApp Cloud API, Messenger Platform, Instagram Messaging)
 * normalized into one list of items. Tolerant by design: Meta adds fields and event kinds
 * over time, and one event Parley does not understand must not cost the others in the same
 * delivery, so anything unrecognized is skipped and nothing here throws.
 */

import { storableText } from "../storable-text.js";

/** Which connected channel an item belongs to, as Meta identifies it. */
export type MetaChannelKey =
  | { type: "whatsapp"; phoneNumberId: string }
  | { type: "messenger"; pageId: string }
  | { type: "instagram"; accountId: string };

/**
 * A file the contact sent, not yet fetched: WhatsApp gives a media id (resolved with a Graph
 * call), Messenger and Instagram a signed CDN URL.
 */
export interface InboundMedia {
  id: string | null;
  url: string | null;
  contentType: string | null;
  filename: string | null;
}

export type InboundMessageType = "text" | "image" | "video" | "audio" | "document";
export type MetaStatus = "sent" | "delivered" | "read" | "failed";

export type MetaWebhookItem =
  | {
      kind: "message";
      channel: MetaChannelKey;
      providerMessageId: string;
      from: { id: string; name: string | null };
      timestamp: Date;
      type: InboundMessageType;
      text: string | null;
      media: InboundMedia | null;
    }
  | {
      kind: "status";
      channel: MetaChannelKey;
      providerMessageId: string;
      callbackData: string | null;
      status: MetaStatus;
      error: { code: string; message: string } | null;
      timestamp: Date;
    }
  /** Messenger `message_reads`: every message to the contact up to `watermark` was read. */
  | { kind: "read_watermark"; channel: MetaChannelKey; contactId: string; watermark: Date }
  /** Messenger `message_deliveries` without `mids`: everything up to `watermark` arrived. */
  | { kind: "delivery_watermark"; channel: MetaChannelKey; contactId: string; watermark: Date };

type MessageItem = Extract<MetaWebhookItem, { kind: "message" }>;
type Content = Pick<MessageItem, "type" | "text" | "media">;
type Json = Record<string, unknown>;

/**
 * The items of one webhook delivery, in payload order. `receivedAt` stands in for a
 * timestamp Meta left out: dropping a customer's message over it would be worse.
 */
export function parseMetaWebhook(body: unknown, receivedAt: Date = new Date()): MetaWebhookItem[] {
  const root = recordOf(body);
  const entries = arrayOf(root?.entry);
  switch (root?.object) {
    case "whatsapp_business_account":
      return entries.flatMap((entry) => whatsappEntry(entry, receivedAt));
    case "page":
      return entries.flatMap((entry) => messagingEntry(entry, "messenger", receivedAt));
    case "instagram":
      return entries.flatMap((entry) => messagingEntry(entry, "instagram", receivedAt));
    default:
      return [];
  }
}

/**
 * The account ids a delivery names, distinct, in payload order: every `entry[].id` (the
 * Page or Instagram account; WhatsApp's business account) and every WhatsApp
 * `entry[].changes[].value.metadata.phone_number_id`. Read before the signature is checked,
 * to find the few channels whose app secret may have signed it; at most `max` are returned.
 */
export function metaAccountIds(body: unknown, max: number): string[] {
  const ids = new Set<string>();
  const add = (value: unknown) => {
    const id = ids.size < max ? idOf(value) : null;
    if (id) ids.add(id);
  };
  for (const entry of arrayOf(recordOf(body)?.entry)) {
    const record = recordOf(entry);
    add(record?.id);
    for (const change of arrayOf(record?.changes)) {
      add(recordOf(recordOf(recordOf(change)?.value)?.metadata)?.phone_number_id);
    }
    if (ids.size >= max) break;
  }
  return [...ids];
}

// --- WhatsApp Cloud API: entry[].changes[] with field "messages" -------------------------

function whatsappEntry(entry: unknown, receivedAt: Date): MetaWebhookItem[] {
  return arrayOf(recordOf(entry)?.changes).flatMap((change) => {
    const record = recordOf(change);
    const value = recordOf(record?.value);
    const phoneNumberId = idOf(recordOf(value?.metadata)?.phone_number_id);
    // Other fields (account_update, message_template_status_update...) are not conversations.
    if (record?.field !== "messages" || !value || !phoneNumberId) return [];
    const channel: MetaChannelKey = { type: "whatsapp", phoneNumberId };
    const names = contactNames(value.contacts);
    return [
      ...arrayOf(value.messages).flatMap((message) => whatsappMessage(message, channel, names, receivedAt)),
      ...arrayOf(value.statuses).flatMap((status) => whatsappStatus(status, channel, receivedAt)),
    ];
  });
}

/** `contacts[]` carries the profile names of the senders, by `wa_id`. */
function contactNames(contacts: unknown): Map<string, string> {
  const names = new Map<string, string>();
  for (const contact of arrayOf(contacts)) {
    const record = recordOf(contact);
    const waId = idOf(record?.wa_id);
    const name = stringOf(recordOf(record?.profile)?.name);
    if (waId && name) names.set(waId, name);
  }
  return names;
}

function whatsappMessage(
  raw: unknown,
  channel: MetaChannelKey,
  names: Map<string, string>,
  receivedAt: Date,
): MetaWebhookItem[] {
  const message = recordOf(raw);
  const from = idOf(message?.from);
  const id = stringOf(message?.id);
  if (!message || !from || !id) return [];
  return [
    {
      kind: "message",
      channel,
      providerMessageId: id,
      from: { id: from, name: names.get(from) ?? null },
      timestamp: secondsOf(message.timestamp) ?? receivedAt,
      ...whatsappContent(stringOf(message.type) ?? "unknown", message),
    },
  ];
}

const WHATSAPP_MEDIA: Record<string, Exclude<InboundMessageType, "text">> = {
  image: "image",
  video: "video",
  audio: "audio",
  document: "document",
  // A sticker is a WebP image; Parley has no sticker type.
  sticker: "image",
};

function whatsappContent(type: string, message: Json): Content {
  if (type === "text") return textContent(stringOf(recordOf(message.text)?.body), type);
  const kind = WHATSAPP_MEDIA[type];
  const media = recordOf(message[type]);
  const mediaId = idOf(media?.id);
  if (kind && media && mediaId) {
    return {
      type: kind,
      // The caption is the text of a media message.
      text: stringOf(media.caption),
      media: {
        id: mediaId,
        url: null,
        contentType: stringOf(media.mime_type),
        filename: kind === "document" ? stringOf(media.filename) : null,
      },
    };
  }
  // Replies to buttons and lists are what the contact tapped: their label is the text.
  if (type === "button") return textContent(stringOf(recordOf(message.button)?.text), type);
  if (type === "interactive") return textContent(interactiveTitle(recordOf(message.interactive)), type);
  return textContent(null, type);
}

function interactiveTitle(interactive: Json | undefined): string | null {
  const reply = recordOf(interactive?.button_reply) ?? recordOf(interactive?.list_reply);
  return stringOf(reply?.title);
}

const STATUSES: ReadonlySet<string> = new Set<MetaStatus>(["sent", "delivered", "read", "failed"]);

function whatsappStatus(raw: unknown, channel: MetaChannelKey, receivedAt: Date): MetaWebhookItem[] {
  const status = recordOf(raw);
  const id = stringOf(status?.id);
  const value = stringOf(status?.status);
  // Other values ("deleted", "warning") do not move a message along.
  if (!status || !id || !value || !STATUSES.has(value)) return [];
  return [
    {
      kind: "status",
      channel,
      providerMessageId: id,
      // Parley's message id, sent as `biz_opaque_callback_data`: found even before the wamid is stored.
      callbackData: stringOf(status.biz_opaque_callback_data),
      status: value as MetaStatus,
      error: value === "failed" ? whatsappError(status.errors) : null,
      timestamp: secondsOf(status.timestamp) ?? receivedAt,
    },
  ];
}

/** The first of `errors[]`, untranslated: its code, and its `title` as the message. */
function whatsappError(errors: unknown): { code: string; message: string } | null {
  const first = recordOf(arrayOf(errors)[0]);
  const code = idOf(first?.code);
  if (!first || !code) return null;
  return { code, message: stringOf(first.title) ?? stringOf(first.message) ?? "" };
}

// --- Messenger and Instagram: entry[].messaging[] ----------------------------------------

function messagingEntry(entry: unknown, type: "messenger" | "instagram", receivedAt: Date): MetaWebhookItem[] {
  const record = recordOf(entry);
  const ownerId = idOf(record?.id);
  if (!record || !ownerId) return [];
  const channel: MetaChannelKey = type === "messenger" ? { type, pageId: ownerId } : { type, accountId: ownerId };
  return arrayOf(record.messaging).flatMap((event) => messagingEvent(recordOf(event), channel, receivedAt));
}

function messagingEvent(event: Json | undefined, channel: MetaChannelKey, receivedAt: Date): MetaWebhookItem[] {
  // For messages, deliveries and reads alike the sender is the contact (the page for echoes).
  const contactId = idOf(recordOf(event?.sender)?.id);
  if (!event || !contactId) return [];
  const timestamp = millisOf(event.timestamp) ?? receivedAt;
  const message = recordOf(event.message);
  if (message) return inboundMessage(message, channel, contactId, timestamp);
  const delivery = recordOf(event.delivery);
  if (delivery) return deliveries(delivery, channel, contactId, timestamp);
  const read = recordOf(event.read);
  if (read) return reads(read, channel, contactId, timestamp);
  // Postbacks, reactions, referrals, opt-ins: not messages of the conversation.
  return [];
}

function inboundMessage(message: Json, channel: MetaChannelKey, contactId: string, timestamp: Date): MetaWebhookItem[] {
  const mid = stringOf(message.mid);
  // Echoes are the page's own sends (Parley's, or another tool's); `is_deleted` is an unsend.
  if (!mid || message.is_echo === true || message.is_deleted === true) return [];
  const base = { kind: "message" as const, channel, from: { id: contactId, name: null }, timestamp };
  const text = stringOf(message.text);
  const attachments = arrayOf(message.attachments)
    .map(recordOf)
    .filter((attachment) => attachment !== undefined);
  if (attachments.length === 0) {
    return [{ ...base, providerMessageId: mid, ...textContent(text, message.is_unsupported ? "unsupported" : null) }];
  }
  // Parley's message holds one file: several attachments become several messages, the
  // first keeping the mid (and the text, as its caption), the others `mid#index`.
  return attachments.map((attachment, index) => ({
    ...base,
    providerMessageId: index === 0 ? mid : `${mid}#${index}`,
    ...attachmentContent(attachment, index === 0 ? text : null),
  }));
}

const ATTACHMENT_TYPES: Record<string, Exclude<InboundMessageType, "text">> = {
  image: "image",
  video: "video",
  audio: "audio",
  file: "document",
};

function attachmentContent(attachment: Json, text: string | null): Content {
  const type = stringOf(attachment.type) ?? "unknown";
  const kind = ATTACHMENT_TYPES[type];
  const url = stringOf(recordOf(attachment.payload)?.url);
  if (!kind || !url) return textContent(text, type);
  return { type: kind, text, media: { id: null, url, contentType: null, filename: null } };
}

function deliveries(delivery: Json, channel: MetaChannelKey, contactId: string, timestamp: Date): MetaWebhookItem[] {
  const watermark = millisOf(delivery.watermark);
  const mids = arrayOf(delivery.mids).flatMap((mid) => stringOf(mid) ?? []);
  if (mids.length > 0) {
    return mids.map((mid) => ({
      kind: "status",
      channel,
      providerMessageId: mid,
      callbackData: null,
      status: "delivered",
      error: null,
      timestamp: watermark ?? timestamp,
    }));
  }
  return watermark ? [{ kind: "delivery_watermark", channel, contactId, watermark }] : [];
}

/** Instagram names the message read (`mid`); Messenger gives a watermark. */
function reads(read: Json, channel: MetaChannelKey, contactId: string, timestamp: Date): MetaWebhookItem[] {
  const mid = stringOf(read.mid);
  if (mid) {
    return [
      { kind: "status", channel, providerMessageId: mid, callbackData: null, status: "read", error: null, timestamp },
    ];
  }
  const watermark = millisOf(read.watermark);
  return watermark ? [{ kind: "read_watermark", channel, contactId, watermark }] : [];
}

// --- Shared --------------------------------------------------------------------------

/**
 * A text message, or a placeholder for a kind Parley cannot show (location, contacts,
 * reaction, a shared post...): the business still sees that something arrived.
 */
function textContent(text: string | null, type: string | null): Content {
  if (text !== null) return { type: "text", text, media: null };
  const what = type && type !== "unsupported" && type !== "text" ? `unsupported ${type}` : "unsupported";
  return { type: "text", text: `[${what} message]`, media: null };
}

function recordOf(value: unknown): Json | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}

function arrayOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function stringOf(value: unknown): string | null {
  if (typeof value !== "string") return null;
  const text = storableText(value);
  return text.length > 0 ? text : null;
}

/** Meta's ids are strings; a safe integer (a hand-written test payload) is taken too. */
function idOf(value: unknown): string | null {
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) return String(value);
  return stringOf(value);
}

/** WhatsApp: Unix seconds, as a string. */
function secondsOf(value: unknown): Date | null {
  const seconds = numberOf(value);
  return seconds === null ? null : dateOf(seconds * 1000);
}

/** Messenger and Instagram: Unix milliseconds, as a number. */
function millisOf(value: unknown): Date | null {
  const millis = numberOf(value);
  return millis === null ? null : dateOf(millis);
}

function numberOf(value: unknown): number | null {
  if (typeof value === "number" && Number.isFinite(value) && value > 0) return value;
  if (typeof value === "string" && /^\d+$/.test(value) && Number(value) > 0) return Number(value);
  return null;
}

function dateOf(millis: number): Date | null {
  const date = new Date(millis);
  return Number.isNaN(date.getTime()) ? null : date;
}
