import { normalizePhone, phoneDigitForms, smsSettingsOf } from "@parley/channels";
import {
  attachments,
  type channels,
  contacts,
  conversations,
  type Database,
  inTenant,
  isUniqueViolation,
  messages,
  newId,
  type Queryable,
  type TenantScope,
} from "@parley/db";
import {
  ATTACHMENT_LIFETIME_HOURS,
  type ChannelType,
  type EmailAuthentication,
  type Message,
  type MessageType,
} from "@parley/schema";
import { and, desc, eq, inArray, isNull, type SQL, sql } from "drizzle-orm";
import type { AttachmentStore } from "../attachments/store.js";
import { serializeContact } from "../contacts/serialize.js";
import { serializeConversation } from "../conversations/serialize.js";
import { recordEvent } from "../events/record-event.js";
import { ingestInboundMessage } from "../messages/ingest.js";

type ChannelRow = typeof channels.$inferSelect;

/** A message a provider brought in, in the terms every channel shares. */
export interface ChannelInbound {
  /** The provider's id: a retried webhook or a re-sent mail is stored once. */
  providerMessageId: string | null;
  /** The contact's address on the channel (WhatsApp id, scoped id, email address) and the name it gave. */
  from: { address: string; name: string | null };
  /** Provider ids this message answers (email `In-Reply-To`, `References`), most relevant first. */
  threadHints?: string[];
  type: Exclude<MessageType, "template">;
  text: string | null;
  file?: { bytes: Buffer; contentType: string; filename: string } | null;
  metadata?: Record<string, unknown>;
  /**
   * Email: the sender's SPF/DKIM/DMARC verdict, stored on the message. Unverified mail never
   * joins an existing contact or a verified conversation, unless it answers Parley's own
   * mail: see `conversationFor`.
   */
  authentication?: EmailAuthentication;
}

/** A duplicate names the message stored the first time, when it can (a race leaves it unknown). */
export type ReceiveOutcome = { duplicate: false; message: Message } | { duplicate: true; messageId: string | null };

/**
 * Records a message from a channel: the contact and conversation created on first
 * contact (with their events), its file stored as an attachment, the message and
 * `message.received`, all in one transaction. A provider id seen before changes nothing.
 */
export async function receiveChannelMessage(
  db: Database,
  baseUrl: string,
  channel: ChannelRow,
  inbound: ChannelInbound,
  store: AttachmentStore,
  /** Runs in the transaction once a new message is stored (an SMS's STOP or START, see receiveSms). */
  onReceived?: (tx: Queryable, conversationId: string) => Promise<void>,
): Promise<ReceiveOutcome> {
  const tenant = { organizationId: channel.organizationId, environment: channel.environment };
  try {
    return await db.transaction(async (tx) => {
      const existing = await alreadyReceived(tx, tenant, inbound.providerMessageId);
      if (existing) return { duplicate: true, messageId: existing };
      await lockAddress(tx, channel.id, inbound.from.address);
      const conversationId = await conversationFor(tx, tenant, channel, inbound);
      const attachment = inbound.file ? await storeFile(tx, store, tenant, inbound.file) : undefined;
      const message = await ingestInboundMessage(tx, baseUrl, tenant, {
        conversationId,
        type: inbound.type,
        text: inbound.text,
        attachment,
        ...(inbound.providerMessageId ? { providerMessageId: inbound.providerMessageId } : {}),
        ...(inbound.metadata ? { metadata: inbound.metadata } : {}),
        ...(inbound.authentication ? { authentication: inbound.authentication } : {}),
      });
      await onReceived?.(tx, conversationId);
      return { duplicate: false, message };
    });
  } catch (error) {
    // The same provider message arriving twice at once: the second commit meets the unique index.
    if (isUniqueViolation(error)) return { duplicate: true, messageId: null };
    throw error;
  }
}

async function alreadyReceived(
  tx: Queryable,
  tenant: TenantScope,
  providerMessageId: string | null,
): Promise<string | undefined> {
  if (!providerMessageId) return undefined;
  const [row] = await tx
    .select({ id: messages.id })
    .from(messages)
    .where(
      and(
        inTenant(messages, tenant),
        eq(messages.direction, "inbound"),
        eq(messages.providerMessageId, providerMessageId),
      ),
    )
    .limit(1);
  return row?.id;
}

/**
 * Two first messages from a new address, processed at once, would each create a contact
 * and a conversation: one at a time per channel and address (released at commit).
 */
async function lockAddress(tx: Queryable, channelId: string, address: string) {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`${channelId}/${address}`}, 0))`);
}

/**
 * The conversation a message belongs to: the one holding a message it answers (email
 * threading), else the contact's latest on this channel from the same address, else a
 * new one (with the contact, found by phone or email, or created).
 *
 * An email whose sender is unverified (DMARC did not pass: `From:` may be anyone's) joins
 * the conversation of a mail Parley sent that it names: Parley's Message-IDs are random and
 * known only to the recipients of that mail, so naming one is proof enough (the message
 * keeps its verdict). Naming none, it is kept apart: it joins only a conversation that
 * unverified mail from the same address started, else starts one flagged `unverified`,
 * with a contact of its own.
 */
async function conversationFor(
  tx: Queryable,
  tenant: TenantScope,
  channel: ChannelRow,
  inbound: ChannelInbound,
): Promise<string> {
  const unverified = inbound.authentication ? !inbound.authentication.verified : false;
  const hints = inbound.threadHints ?? [];
  if (unverified) {
    const answered = await conversationByThread(tx, tenant, channel.id, hints, "ours");
    if (answered) return answered;
    const existing = await latestConversationFrom(tx, tenant, channel.id, inbound.from.address, true);
    if (existing) return existing;
    return createConversation(
      tx,
      tenant,
      channel,
      inbound,
      await createContact(tx, tenant, channel.type, inbound.from),
      true,
    );
  }
  const threaded = await conversationByThread(tx, tenant, channel.id, hints, "any");
  if (threaded) return threaded;
  const existing = await latestConversationFrom(tx, tenant, channel.id, inbound.from.address, false);
  if (existing) return existing;
  const contactId = await contactFor(tx, tenant, channel, inbound.from);
  // A conversation the business started (on the contact's phone or email) takes the reply.
  const [started] = await tx
    .select({ id: conversations.id })
    .from(conversations)
    .where(
      and(
        inTenant(conversations, tenant),
        eq(conversations.contactId, contactId),
        eq(conversations.channelId, channel.id),
        isNull(conversations.recipient),
      ),
    )
    .orderBy(desc(conversations.createdAt))
    .limit(1);
  if (started) {
    await tx
      .update(conversations)
      .set({ recipient: inbound.from.address })
      .where(and(inTenant(conversations, tenant), eq(conversations.id, started.id)));
    return started.id;
  }
  return createConversation(tx, tenant, channel, inbound, contactId, false);
}

/**
 * The newest conversation on the channel with this sender, among the unverified ones or the
 * verified ones only: unverified mail never lands in a verified conversation, nor the reverse.
 */
async function latestConversationFrom(
  tx: Queryable,
  tenant: TenantScope,
  channelId: string,
  address: string,
  unverified: boolean,
): Promise<string | undefined> {
  const [latest] = await tx
    .select({ id: conversations.id })
    .from(conversations)
    .where(
      and(
        inTenant(conversations, tenant),
        eq(conversations.channelId, channelId),
        eq(conversations.recipient, address),
        eq(conversations.unverified, unverified),
      ),
    )
    .orderBy(desc(conversations.createdAt))
    .limit(1);
  return latest?.id;
}

async function createConversation(
  tx: Queryable,
  tenant: TenantScope,
  channel: ChannelRow,
  inbound: ChannelInbound,
  contactId: string,
  unverified: boolean,
): Promise<string> {
  const [row] = await tx
    .insert(conversations)
    .values({
      id: newId("conversation"),
      ...tenant,
      contactId,
      channelId: channel.id,
      recipient: inbound.from.address,
      metadata: {},
      unverified,
    })
    .returning();
  if (!row) throw new Error("conversation insert returned nothing");
  await recordEvent(tx, tenant, "conversation.created", { conversation: serializeConversation(row, channel.type) });
  return row.id;
}

/** A reply names its parent and References from the end: past this many, older ancestors are not looked up. */
const MAX_THREAD_HINTS = 50;

/**
 * The conversation on the channel holding the first message `hints` names (newest first):
 * among all its messages, or among `ours` only, the messages Parley sent, whose provider
 * ids (Message-IDs Parley made) no one but their recipients knows.
 */
async function conversationByThread(
  tx: Queryable,
  tenant: TenantScope,
  channelId: string,
  allHints: string[],
  among: "any" | "ours",
): Promise<string | undefined> {
  const hints = allHints.slice(0, MAX_THREAD_HINTS);
  if (hints.length === 0) return undefined;
  const rows = await tx
    .select({ conversationId: messages.conversationId, providerMessageId: messages.providerMessageId })
    .from(messages)
    .innerJoin(conversations, eq(conversations.id, messages.conversationId))
    .where(
      and(
        inTenant(messages, tenant),
        eq(conversations.channelId, channelId),
        inArray(messages.providerMessageId, hints),
        among === "ours" ? eq(messages.direction, "outbound") : undefined,
      ),
    );
  for (const hint of hints) {
    const match = rows.find((row) => row.providerMessageId === hint);
    if (match) return match.conversationId;
  }
  return undefined;
}

/** The contact behind an address: matched by phone (WhatsApp, SMS) or email, else created with `contact.created`. */
async function contactFor(
  tx: Queryable,
  tenant: TenantScope,
  channel: ChannelRow,
  from: ChannelInbound["from"],
): Promise<string> {
  const found = channel.type === "sms" ? await smsContact(tx, tenant, channel, from.address) : undefined;
  if (found) return found;
  const match = addressMatch(channel.type, from.address);
  if (match) {
    const [row] = await matchingContacts(tx, tenant, match).limit(1);
    if (row) return row.id;
  }
  return createContact(tx, tenant, channel.type, from);
}

/**
 * How a contact's own field names an address: a WhatsApp id is a phone's digits (a phone the
 * business typed as `+1 555-012-3456` is the same number, as a reply to it is sent,
 * `recipientOf`); an email address in any case.
 */
function addressMatch(type: ChannelType, address: string) {
  if (type === "whatsapp")
    return eq(sql`regexp_replace(${contacts.phone}, '[^0-9]', '', 'g')`, address.replace(/\D/g, ""));
  if (type === "email") return eq(sql`lower(${contacts.email})`, address.toLowerCase());
  return undefined;
}

/** The tenant's contacts that `match`, newest first; a contact that unverified mail created is the sender's claim only: never matched. */
function matchingContacts(tx: Queryable, tenant: TenantScope, match: SQL) {
  return tx
    .select({ id: contacts.id, phone: contacts.phone })
    .from(contacts)
    .where(
      and(
        inTenant(contacts, tenant),
        match,
        sql`not exists (select 1 from ${conversations} where ${conversations.contactId} = ${contacts.id} and ${conversations.unverified})`,
      ),
    )
    .orderBy(desc(contacts.createdAt));
}

/**
 * The contact whose phone is this E.164 number however it was typed (`(415) 555-0100`,
 * `+1 415 555 0100`, `0044 7700 900123`): the contacts whose phone has one of the number's
 * digit forms (an index probe each), each then read with the channel's default region to be sure.
 */
async function smsContact(
  tx: Queryable,
  tenant: TenantScope,
  channel: ChannelRow,
  address: string,
): Promise<string | undefined> {
  const forms = phoneDigitForms(address);
  const digits = sql`regexp_replace(${contacts.phone}, '[^0-9]', '', 'g')`;
  const candidates = await matchingContacts(tx, tenant, inArray(digits, forms));
  const region = smsSettingsOf(channel.settings).default_region;
  return candidates.find((candidate) => candidate.phone && normalizePhone(candidate.phone, region) === address)?.id;
}

/** A new contact for an address, with `contact.created`. */
async function createContact(
  tx: Queryable,
  tenant: TenantScope,
  type: ChannelType,
  from: ChannelInbound["from"],
): Promise<string> {
  const phone = contactPhoneOf(type, from.address);
  const email = type === "email" ? from.address.toLowerCase() : null;
  const [row] = await tx
    .insert(contacts)
    .values({
      id: newId("contact"),
      ...tenant,
      name: from.name ?? email ?? phone ?? null,
      email,
      phone,
      customFields: {},
      // Messenger and Instagram give a scoped id and nothing else: kept so the business can tell who wrote.
      metadata: phone || email ? {} : { [`${type}_id`]: from.address },
    })
    .returning();
  if (!row) throw new Error("contact insert returned nothing");
  await recordEvent(tx, tenant, "contact.created", { contact: serializeContact(row, []) });
  return row.id;
}

/**
 * The phone a new contact gets from its address: a WhatsApp id's digits with `+`; an SMS
 * sender's E.164 number (a short code or a sender name is no phone: it is kept in metadata).
 */
function contactPhoneOf(type: ChannelType, address: string): string | null {
  const digits = address.replace(/\D/g, "");
  if (type === "whatsapp") return digits ? `+${digits}` : null;
  if (type === "sms") return address.startsWith("+") ? address : null;
  return null;
}

async function storeFile(
  tx: Queryable,
  store: AttachmentStore,
  tenant: TenantScope,
  file: NonNullable<ChannelInbound["file"]>,
) {
  const createdAt = new Date();
  const [row] = await tx
    .insert(attachments)
    .values({
      id: newId("attachment"),
      ...tenant,
      filename: file.filename,
      contentType: file.contentType,
      size: file.bytes.length,
      retained: true,
      createdAt,
      expiresAt: new Date(createdAt.getTime() + ATTACHMENT_LIFETIME_HOURS * 3_600_000),
    })
    .returning();
  if (!row) throw new Error("attachment insert returned nothing");
  await store.put(tx, row, file.bytes, file.contentType);
  return row;
}
