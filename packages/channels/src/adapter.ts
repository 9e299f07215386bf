import type { ChannelType, MessageType } from "@parley/schema";

/** What an adapter needs to carry one outbound message out. */
export interface OutboundMessage {
  id: string;
  type: Exclude<MessageType, "template">;
  text: string | null;
  attachment: { url: string; contentType: string; filename: string; size: number } | null;
  contact: { name: string | null; email: string | null; phone: string | null; externalId: string | null };
  channel: { id: string; type: ChannelType; settings: Record<string, unknown> };
  /** The contact's last message on this channel: the start of a session window. */
  lastInboundAt: Date | null;
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
 * A fault of the provider that may pass (timeout, 5xx, rate limit): the delivery job is
 * retried with backoff. A refusal is a `failed` result instead, never retried.
 */
export class TemporaryChannelError extends Error {
  override name = "TemporaryChannelError";
}

/** One implementation per channel type and environment (sandbox, provider). */
export interface ChannelAdapter {
  send(message: OutboundMessage): Promise<SendResult>;
}
