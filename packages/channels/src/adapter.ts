import type { ChannelType, MessageType } from "@parley/schema";

/** The file of a media message, as an adapter may carry it out. */
export interface OutboundAttachment {
  /** The API's content address (needs an API key): what events and responses show. */
  url: string;
  /**
   * A signed, expiring address of the same bytes that needs no key: what a provider
   * fetching by link (Meta's `link` / `payload.url`) is given.
   */
  publicUrl: string;
  contentType: string;
  filename: string;
  size: number;
  /** The bytes, for adapters that carry the file themselves (email MIME parts). */
  read(): Promise<Buffer>;
}

/** What an adapter needs to carry one outbound message out. */
export interface OutboundMessage {
  id: string;
  type: Exclude<MessageType, "template">;
  text: string | null;
  attachment: OutboundAttachment | null;
  contact: { name: string | null; email: string | null; phone: string | null; externalId: string | null };
  /**
   * The contact's address on this channel: a WhatsApp id (digits of the phone number),
   * a Messenger page-scoped id, an Instagram-scoped id, an email address. Taken from the
   * conversation the contact opened, else from the contact (phone, email). Null: unknown.
   */
  recipient: string | null;
  /** Provider settings of the channel, secrets decrypted (see `settings.ts`). */
  channel: { id: string; type: ChannelType; settings: Record<string, unknown> };
  conversation: {
    id: string;
    /** Email: the thread's subject (the last inbound subject, else `metadata.subject`). */
    subject: string | null;
    /** Provider ids of the conversation's earlier messages, oldest first: email threading. */
    threadIds: string[];
  };
  /** The contact's last message on this channel: the start of a session window. */
  lastInboundAt: Date | null;
  /** SMS: the contact opted out on this channel (STOP) and has not opted in again; absent elsewhere. */
  optedOut?: boolean;
  /** 1 on the first try; retries of a temporary fault count up. */
  attempt: number;
}

/** A later report about a message, as a provider's webhook would bring it. */
export interface Receipt {
  status: "delivered" | "read" | "failed";
  /** When the sandbox should apply it, after the send was accepted. */
  afterMs: number;
  error?: { code: string; message: string };
}

export type SendResult =
  | { outcome: "sent"; providerMessageId: string; receipts: Receipt[] }
  | { outcome: "failed"; error: { code: string; message: string } };

/**
 * A rule checked before a send, by sandbox and live adapters alike: a refusal, or undefined
 * to go ahead (WhatsApp's session window, an SMS contact's opt-out).
 */
export type SendRule = (message: OutboundMessage, now: Date) => SendResult | undefined;

/**
 * A fault of the provider that may pass (timeout, 5xx, rate limit): the delivery job is
 * retried with backoff. A refusal is a `failed` result instead, never retried.
 */
export class TemporaryChannelError extends Error {
  override name = "TemporaryChannelError";
}

/** One implementation per channel type and environment (sandbox, provider). */
export interface ChannelAdapter {
  send(message: OutboundMessage): Promise<SendResult>;
  /**
   * The most messages a second the provider takes from one channel (WhatsApp: per
   * business phone number); the worker paces each channel's sends to it. Absent: no pace.
   */
  messagesPerSecond?: number;
}

/** Where Meta's Graph API is reached: configurable so tests (and proxies) can stand in. */
export interface MetaOptions {
  /** `META_GRAPH_BASE_URL`, default `https://graph.facebook.com`. */
  graphBaseUrl: string;
  /** `META_GRAPH_API_VERSION`, default `v23.0`. */
  apiVersion: string;
  /** Per request, after which the attempt counts as a temporary fault. */
  timeoutMs: number;
}
