import { normalizePhone, type OutboundAttachment, type OutboundMessage, smsSettingsOf } from "@parley/channels";
import {
  attachments,
  channels,
  contacts,
  conversations,
  messages,
  postgresClientOf,
  type Queryable,
  reusableQuery,
  smsOptOuts,
} from "@parley/db";
import { and, asc, desc, eq, inArray, isNotNull, or, sql } from "drizzle-orm";
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
type ChannelRow = typeof channels.$inferSelect;
type ConversationRow = typeof conversations.$inferSelect;

/**
 * What the deliveries of several messages need, in the order of `messageIds` (a batched
 * job's): the messages with their conversations, channels and contacts in one statement,
 * where each one's session window starts in another, whatever their number; attachments
 * and email threads only for the messages that have them. Messages with nothing to
 * deliver (gone, inbound, templates) are left out. A channel's secrets are opened once.
 */
export async function loadDeliveryWorks(
  db: Queryable,
  keys: DeliveryKeys,
  baseUrl: string,
  messageIds: readonly string[],
  attempt: number,
): Promise<DeliveryWork[]> {
  if (messageIds.length === 0) return [];
  const ids = [...messageIds];
  const [rows, lastInbound] = await Promise.all([
    ids.length === 1 ? deliveryRowQuery(db, { id: ids[0] }) : deliveryRows(db, ids),
    lastInboundAts(db, ids),
  ]);
  const byId = new Map(rows.map((row) => [row.message.id, row]));
  const deliverable = ids.flatMap((id) => {
    const row = byId.get(id);
    return row?.message.direction === "outbound" && row.message.type !== "template" ? [row] : [];
  });
  const attachmentIds = deliverable.flatMap((row) => (row.message.attachmentId ? [row.message.attachmentId] : []));
  const attachmentsById = new Map(
    attachmentIds.length > 0
      ? (await db.select().from(attachments).where(inArray(attachments.id, attachmentIds))).map((row) => [row.id, row])
      : [],
  );
  const optedOut = await optedOutContacts(db, deliverable);
  const settingsByChannel = new Map<string, ReturnType<typeof openSettings>>();
  const works: DeliveryWork[] = [];
  for (const row of deliverable) {
    const attachment = row.message.attachmentId ? attachmentsById.get(row.message.attachmentId) : undefined;
    const thread =
      row.channel.type === "email"
        ? await emailThread(db, row.conversation, row.message.id)
        : { subject: null, threadIds: [] };
    let settings = settingsByChannel.get(row.channel.id);
    if (!settings) {
      settings = openSettings(keys, row.channel);
      settingsByChannel.set(row.channel.id, settings);
    }
    works.push({
      status: row.message.status,
      channel: row.channel,
      ...(settings.error ? { settingsError: settings.error } : {}),
      message: {
        id: row.message.id,
        type: row.message.type as DeliveryWork["message"]["type"],
        text: row.message.text,
        attachment: attachment ? await outboundAttachment(db, keys, baseUrl, attachment) : null,
        contact: {
          name: row.contact.name,
          email: row.contact.email,
          phone: row.contact.phone,
          externalId: row.contact.externalId,
        },
        recipient: recipientOf(row.channel, row.conversation, row.contact),
        channel: { id: row.channel.id, type: row.channel.type, settings: settings.value },
        conversation: { id: row.conversation.id, ...thread },
        lastInboundAt: lastInbound.get(row.message.id) ?? null,
        ...(row.channel.type === "sms" ? { optedOut: optedOut.has(optOutKey(row.contact.id, row.channel.id)) } : {}),
        attempt,
      },
    });
  }
  return works;
}

async function outboundAttachment(
  db: Queryable,
  keys: DeliveryKeys,
  baseUrl: string,
  attachment: typeof attachments.$inferSelect,
): Promise<OutboundAttachment> {
  return {
    url: attachmentContentUrl(baseUrl, attachment.id),
    // Providers fetch the file from the bucket itself where pre-signed links are on.
    publicUrl: keys.attachmentStore.presignedUrl
      ? await keys.attachmentStore.presignedUrl(attachment, attachment.contentType, SIGNED_CONTENT_URL_LIFETIME_MS)
      : signedContentUrl(baseUrl, keys.contentUrlSecret, attachment.id),
    contentType: attachment.contentType,
    filename: attachment.filename,
    size: attachment.size,
    read: async () => {
      const bytes = await keys.attachmentStore.get(db, attachment);
      if (!bytes) throw new Error(`The file of attachment ${attachment.id} is gone`);
      return bytes;
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
 * (a business may write first on WhatsApp, SMS and email; Messenger and Instagram need the
 * person to have written). An SMS goes to the phone in E.164, read with the channel's
 * default region when it was typed without a country code.
 */
function recipientOf(channel: ChannelRow, conversation: ConversationRow, contact: ContactRow): string | null {
  if (conversation.recipient) return conversation.recipient;
  if (channel.type === "whatsapp" && contact.phone) return contact.phone.replace(/\D/g, "");
  if (channel.type === "sms" && contact.phone) {
    return normalizePhone(contact.phone, smsSettingsOf(channel.settings).default_region);
  }
  if (channel.type === "email") return contact.email;
  return null;
}

function optOutKey(contactId: string, channelId: string): string {
  return `${contactId}/${channelId}`;
}

/**
 * The contacts of the SMS messages among `rows` who opted out on the message's channel
 * (STOP), as optOutKey pairs: one statement (a probe of the opt-outs' unique key per message),
 * and none when no message is an SMS.
 */
async function optedOutContacts(
  db: Queryable,
  rows: { channel: ChannelRow; contact: ContactRow }[],
): Promise<Set<string>> {
  const sms = rows.filter((row) => row.channel.type === "sms");
  if (sms.length === 0) return new Set();
  const found = await db
    .select({ contactId: smsOptOuts.contactId, channelId: smsOptOuts.channelId })
    .from(smsOptOuts)
    .where(
      or(
        ...sms.map((row) =>
          and(
            eq(smsOptOuts.organizationId, row.contact.organizationId),
            eq(smsOptOuts.contactId, row.contact.id),
            eq(smsOptOuts.channelId, row.channel.id),
          ),
        ),
      ),
    );
  return new Set(found.map((row) => optOutKey(row.contactId, row.channelId)));
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
  return (await lastInboundAts(db, [messageId])).get(messageId) ?? null;
}

/** lastInboundAt of several messages, in one statement: by message id, absent when none. */
export async function lastInboundAts(db: Queryable, messageIds: readonly string[]): Promise<Map<string, Date>> {
  // One probe of messages_inbound_idx per conversation of the pair: a max() over the join
  // read every inbound message of the contact, a cost that grew with each conversation.
  // The sent messages are read by key first (`offset 0` keeps the planner from joining
  // into them): with statistics that took the conversations for few, it read the sent
  // messages from the conversation's index, every message of a busy conversation for
  // each batch (5 ms at 20,000 messages, and growing).
  // As ISO 8601 text: drizzle's client leaves timestamps as PostgreSQL prints them.
  const rows = await postgresClientOf(db)<{ id: string; at: string | null }[]>`
    select sent.id, to_json(max(newest.created_at)) #>> '{}' as at
    from (select id, conversation_id from messages where id = any(${messageIds as string[]}::text[]) offset 0) as sent
    join conversations as own on own.id = sent.conversation_id
    join conversations on conversations.contact_id = own.contact_id and conversations.channel_id = own.channel_id
    cross join lateral (
      select created_at from messages
      where messages.conversation_id = conversations.id and messages.direction = 'inbound'
      order by created_at desc nulls first
      limit 1
    ) as newest
    group by sent.id`;
  return new Map(rows.flatMap((row) => (row.at ? [[row.id, new Date(row.at)] as const] : [])));
}

function selectDeliveryRows(db: Queryable) {
  return db
    .select({ message: messages, conversation: conversations, channel: channels, contact: contacts })
    .from(messages)
    .innerJoin(conversations, eq(conversations.id, messages.conversationId))
    .innerJoin(channels, eq(channels.id, conversations.channelId))
    .innerJoin(contacts, eq(contacts.id, conversations.contactId));
}

function deliveryRows(db: Queryable, ids: string[]) {
  return deliveryRowsQuery(db, { ids });
}

// A batch's rows, whatever its size: built once (drizzle rebuilt 60 columns each time).
const deliveryRowsQuery = reusableQuery((db) =>
  selectDeliveryRows(db)
    .where(sql`${messages.id} = any(${sql.placeholder("ids")}::text[])`)
    .prepare("load_delivery_works"),
);

// Every delivery reads these: built once (see reusableQuery; the join alone is 60 columns).
const deliveryRowQuery = reusableQuery((db) =>
  selectDeliveryRows(db)
    .where(eq(messages.id, sql.placeholder("id")))
    .prepare("load_delivery_work"),
);
