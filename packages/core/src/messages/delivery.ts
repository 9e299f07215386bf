import type { OutboundMessage } from "@parley/channels";
import { attachments, channels, contacts, conversations, messages, type Queryable } from "@parley/db";
import { and, eq, max } from "drizzle-orm";
import { attachmentContentUrl } from "../attachments/serialize.js";

export interface DeliveryWork {
  message: OutboundMessage;
  channel: typeof channels.$inferSelect;
  status: typeof messages.$inferSelect.status;
}

/** Everything the delivery of one message needs, or undefined when there is nothing to deliver. */
export async function loadDeliveryWork(
  db: Queryable,
  baseUrl: string,
  messageId: string,
  attempt: number,
): Promise<DeliveryWork | undefined> {
  const [row] = await db
    .select({ message: messages, conversation: conversations, channel: channels, contact: contacts })
    .from(messages)
    .innerJoin(conversations, eq(conversations.id, messages.conversationId))
    .innerJoin(channels, eq(channels.id, conversations.channelId))
    .innerJoin(contacts, eq(contacts.id, conversations.contactId))
    .where(eq(messages.id, messageId));
  if (!row || row.message.direction !== "outbound" || row.message.type === "template") return undefined;
  const attachment = row.message.attachmentId
    ? (await db.select().from(attachments).where(eq(attachments.id, row.message.attachmentId)))[0]
    : undefined;
  return {
    status: row.message.status,
    channel: row.channel,
    message: {
      id: row.message.id,
      type: row.message.type,
      text: row.message.text,
      attachment: attachment
        ? {
            url: attachmentContentUrl(baseUrl, attachment.id),
            contentType: attachment.contentType,
            filename: attachment.filename,
            size: attachment.size,
          }
        : null,
      contact: {
        name: row.contact.name,
        email: row.contact.email,
        phone: row.contact.phone,
        externalId: row.contact.externalId,
      },
      channel: { id: row.channel.id, type: row.channel.type, settings: row.channel.settings },
      lastInboundAt: await lastInboundAt(db, row.contact.id, row.channel.id),
      attempt,
    },
  };
}

/** The contact's last message on this channel, across its conversations: where a session window starts. */
export async function lastInboundAt(db: Queryable, contactId: string, channelId: string): Promise<Date | null> {
  const [row] = await db
    .select({ at: max(messages.createdAt) })
    .from(messages)
    .innerJoin(conversations, eq(conversations.id, messages.conversationId))
    .where(
      and(
        eq(conversations.contactId, contactId),
        eq(conversations.channelId, channelId),
        eq(messages.direction, "inbound"),
      ),
    );
  return row?.at ?? null;
}
