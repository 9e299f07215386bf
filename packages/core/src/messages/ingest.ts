import { attachments, conversations, inTenant, messages, newId, type Queryable, type TenantScope } from "@parley/db";
import type { EmailAuthentication, Message } from "@parley/schema";
import { and, eq } from "drizzle-orm";
import type { AttachmentRow } from "../attachments/serialize.js";
import { loadConversation } from "../conversations/load.js";
import { type RecordOptions, recordEvent, recordEvents } from "../events/record-event.js";
import { serializeMessage } from "./serialize.js";

export interface InboundMessage {
  conversationId: string;
  type: Exclude<Message["type"], "template">;
  text: string | null;
  attachment: AttachmentRow | undefined;
  providerMessageId?: string;
  metadata?: Record<string, unknown>;
  authentication?: EmailAuthentication;
}

/**
 * Records a message from the contact, exactly as every channel's inbound path does: the
 * message (status null: Parley observed no delivery), its file kept for as long as the
 * message, a closed conversation reopened, and `message.received`, all in the caller's
 * transaction. The conversation must already be confined to the tenant and locked.
 * `options`: how its events reach the webhook job queue (the outbox, or `relayNow` for a
 * quiet API process's request, see RecordOptions).
 */
export async function ingestInboundMessage(
  tx: Queryable,
  baseUrl: string,
  tenant: TenantScope,
  inbound: InboundMessage,
  options: RecordOptions = {},
): Promise<Message> {
  const now = new Date();
  if (inbound.attachment) {
    await tx
      .update(attachments)
      .set({ retained: true })
      .where(and(inTenant(attachments, tenant), eq(attachments.id, inbound.attachment.id)));
  }
  const [row] = await tx
    .insert(messages)
    .values({
      id: newId("message"),
      ...tenant,
      conversationId: inbound.conversationId,
      direction: "inbound",
      type: inbound.type,
      text: inbound.text,
      attachmentId: inbound.attachment?.id ?? null,
      metadata: inbound.metadata ?? {},
      status: null,
      providerMessageId: inbound.providerMessageId ?? null,
      authentication: inbound.authentication ?? null,
      createdAt: now,
      updatedAt: now,
    })
    .returning();
  if (!row) throw new Error("inbound message insert returned nothing");
  const reopened = await reopenIfClosed(tx, tenant, inbound.conversationId, now);
  const conversation = await loadConversation(tx, tenant, inbound.conversationId);
  const message = serializeMessage(baseUrl, row, inbound.attachment);
  if (!reopened) {
    await recordEvent(tx, tenant, "message.received", { message, conversation }, options);
    return message;
  }
  // One statement: with `relayNow`, both events in one job per endpoint, in order, as the relay puts them.
  await recordEvents(
    tx,
    [
      { tenant, type: "conversation.reopened", data: { conversation } },
      { tenant, type: "message.received", data: { message, conversation } },
    ],
    options,
  );
  return message;
}

/** A customer writing again reopens a closed conversation, as a support inbox does. */
async function reopenIfClosed(tx: Queryable, tenant: TenantScope, conversationId: string, now: Date): Promise<boolean> {
  const thisConversation = and(inTenant(conversations, tenant), eq(conversations.id, conversationId));
  const [current] = await tx.select({ status: conversations.status }).from(conversations).where(thisConversation);
  if (current?.status !== "closed") {
    await tx.update(conversations).set({ updatedAt: now }).where(thisConversation);
    return false;
  }
  await tx.update(conversations).set({ status: "open", closedAt: null, updatedAt: now }).where(thisConversation);
  return true;
}
