import type { OutboundMessage } from "@parley/channels";
import {
  attachments,
  channels,
  contacts,
  conversations,
  messages,
  postgresClientOf,
  type Queryable,
  reusableQuery,
} from "@parley/db";
import { and, asc, desc, eq, isNotNull, sql } from "drizzle-orm";
import { attachmentContentUrl } from "../attachments/serialize.js";
import { SIGNED_CONTENT_URL_LIFETIME_MS, signedContentUrl } from "../attachments/signed-url.js";
import type { AttachmentStore } from "../attachments/store.js";
import { channelSettings } from "../secrets/channel-settings.js";
import type { SecretBox } from "../secrets/secret-box.js";

export interface DeliveryWork {
  message: OutboundMessage;
  channel: typeof channels.$inferSelect;
  status: typeof messages.$inferSelect.status;
  /** Why the channel's secrets could not be opened (another `PARLEY_SECRETS_KEY`): the send fails. */
  settingsError?: string;
}

/** What opening a channel's secrets, signing file links and reading the files takes. */
export interface DeliveryKeys {
  secretBox: SecretBox;
  contentUrlSecret: string;
  /** Where the API stored the files (the same store in every process). */
  attachmentStore: AttachmentStore;
}

/** How many earlier messages an email names in `References`. */
const THREAD_DEPTH = 20;

type ContactRow = typeof contacts.$inferSelect;
type ConversationRow = typeof conversations.$inferSelect;

/** Everything the delivery of one message needs, or undefined when there is nothing to deliver. */
export async function loadDeliveryWork(
  db: Queryable,
  keys: DeliveryKeys,
  baseUrl: string,
  messageId: string,
  attempt: number,
): Promise<DeliveryWork | undefined> {
  // Both in one round trip: where the session window starts is found by the message too.
  const [[row], lastInbound] = await Promise.all([
    deliveryRowQuery(db, { id: messageId }),
    lastInboundAt(db, messageId),
  ]);
  if (row?.message.direction !== "outbound" || row.message.type === "template") return undefined;
  const attachment = row.message.attachmentId
    ? (await db.select().from(attachments).where(eq(attachments.id, row.message.attachmentId)))[0]
    : undefined;
  const thread =
    row.channel.type === "email"
      ? await emailThread(db, row.conversation, messageId)
      : { subject: null, threadIds: [] };
  const settings = openSettings(keys, row.channel);
  return {
    status: row.message.status,
    channel: row.channel,
    ...(settings.error ? { settingsError: settings.error } : {}),
    message: {
      id: row.message.id,
      type: row.message.type,
      text: row.message.text,
      attachment: attachment
        ? {
            url: attachmentContentUrl(baseUrl, attachment.id),
            publicUrl: keys.attachmentStore.presignedUrl
              ? await keys.attachmentStore.presignedUrl(
                  attachment,
                  attachment.contentType,
                  SIGNED_CONTENT_URL_LIFETIME_MS,
                )
              : signedContentUrl(baseUrl, keys.contentUrlSecret, attachment.id),
            contentType: attachment.contentType,
            filename: attachment.filename,
            size: attachment.size,
            read: async () => {
              const bytes = await keys.attachmentStore.get(db, attachment);
              if (!bytes) throw new Error(`The file of attachment ${attachment.id} is gone`);
              return bytes;
            },
          }
        : null,
      contact: {
        name: row.contact.name,
        email: row.contact.email,
        phone: row.contact.phone,
        externalId: row.contact.externalId,
      },
      recipient: recipientOf(row.channel.type, row.conversation, row.contact),
      channel: { id: row.channel.id, type: row.channel.type, settings: settings.value },
      conversation: { id: row.conversation.id, ...thread },
      lastInboundAt: lastInbound,
      attempt,
    },
  };
}

function openSettings(keys: DeliveryKeys, channel: typeof channels.$inferSelect) {
  try {
    return { value: channelSettings(keys.secretBox, channel), error: undefined };
  } catch (error) {
    return { value: channel.settings, error: (error as Error).message };
  }
}

/**
 * Where a reply goes: the address the contact wrote from, else the one on the contact
 * (a business may write first on WhatsApp and email; Messenger and Instagram need the
 * person to have written).
 */
function recipientOf(type: string, conversation: ConversationRow, contact: ContactRow): string | null {
  if (conversation.recipient) return conversation.recipient;
  if (type === "whatsapp" && contact.phone) return contact.phone.replace(/\D/g, "");
  if (type === "email") return contact.email;
  return null;
}

/** The subject and the earlier message ids of an email thread, so replies thread in the customer's client. */
async function emailThread(db: Queryable, conversation: ConversationRow, messageId: string) {
  const earlier = await db
    .select({ providerMessageId: messages.providerMessageId })
    .from(messages)
    .where(
      and(
        eq(messages.conversationId, conversation.id),
        // Earlier in the conversation's order only: a message sent late (a retry) answers what
        // preceded it, not a message written after it that went out first.
        sql`(${messages.createdAt}, ${messages.id}) < (select m.created_at, m.id from messages m where m.id = ${messageId})`,
        isNotNull(messages.providerMessageId),
      ),
    )
    .orderBy(desc(messages.createdAt), desc(messages.id))
    .limit(THREAD_DEPTH);
  const [lastInbound] = await db
    .select({ metadata: messages.metadata })
    .from(messages)
    .where(and(eq(messages.conversationId, conversation.id), eq(messages.direction, "inbound")))
    .orderBy(desc(messages.createdAt), asc(messages.id))
    .limit(1);
  return {
    subject: subjectOf(lastInbound?.metadata) ?? stringOrNull(conversation.metadata.subject),
    threadIds: earlier.map((message) => message.providerMessageId as string).reverse(),
  };
}

function subjectOf(metadata: Record<string, unknown> | undefined): string | null {
  const email = metadata?.email;
  if (typeof email !== "object" || email === null) return null;
  return stringOrNull((email as Record<string, unknown>).subject);
}

function stringOrNull(value: unknown): string | null {
  return typeof value === "string" && value.length > 0 ? value : null;
}

/**
 * The last message of the contact of a message, on the message's channel, across their
 * conversations: where a session window starts.
 */
export async function lastInboundAt(db: Queryable, messageId: string): Promise<Date | null> {
  // One probe of messages_inbound_idx per conversation of the pair: a max() over the join
  // read every inbound message of the contact, a cost that grew with each conversation.
  // As ISO 8601 text: drizzle's client leaves timestamps as PostgreSQL prints them.
  const [row] = await postgresClientOf(db)<{ at: string | null }[]>`
    select to_json(max(newest.created_at)) #>> '{}' as at
    from messages as sent
    join conversations as own on own.id = sent.conversation_id
    join conversations on conversations.contact_id = own.contact_id and conversations.channel_id = own.channel_id
    cross join lateral (
      select created_at from messages
      where messages.conversation_id = conversations.id and messages.direction = 'inbound'
      order by created_at desc nulls first
      limit 1
    ) as newest
    where sent.id = ${messageId}`;
  return row?.at ? new Date(row.at) : null;
}

// Every delivery reads these: built once (see reusableQuery; the join alone is 60 columns).
const deliveryRowQuery = reusableQuery((db) =>
  db
    .select({ message: messages, conversation: conversations, channel: channels, contact: contacts })
    .from(messages)
    .innerJoin(conversations, eq(conversations.id, messages.conversationId))
    .innerJoin(channels, eq(channels.id, conversations.channelId))
    .innerJoin(contacts, eq(contacts.id, conversations.contactId))
    .where(eq(messages.id, sql.placeholder("id")))
    .prepare("load_delivery_work"),
);
