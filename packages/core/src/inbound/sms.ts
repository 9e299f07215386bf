import { normalizePhone, smsOptOutKeyword, smsSettingsOf } from "@parley/channels";
import {
  type channels,
  conversations,
  type Database,
  newId,
  type Queryable,
  smsOptOuts,
  type TenantScope,
} from "@parley/db";
import { and, eq, sql } from "drizzle-orm";
import type { AttachmentStore } from "../attachments/store.js";
import { inboundMediaType } from "./media-kind.js";
import { type ChannelInbound, type ReceiveOutcome, receiveChannelMessage } from "./receive.js";

type ChannelRow = typeof channels.$inferSelect;

/** An SMS or MMS as a provider brings it in. */
export interface SmsInbound extends ChannelInbound {
  /** Twilio's `OptOutType` (`STOP`, `START`, `HELP`), when its Advanced Opt-Out matched a keyword. */
  optOutType?: string | null;
}

/**
 * Records an SMS from a phone, as every SMS provider's inbound path does: the sender's
 * number in E.164 (read with the channel's default region; a short code or sender name is
 * kept as it came), the contact found by that number however it was typed, the message
 * stored and `message.received`; a STOP (or another stop word, or Twilio's `OptOutType`)
 * opts the contact out on the channel and a START opts them back in, in the same transaction.
 */
export async function receiveSms(
  db: Database,
  baseUrl: string,
  channel: ChannelRow,
  inbound: SmsInbound,
  store: AttachmentStore,
): Promise<ReceiveOutcome> {
  const { optOutType, ...message } = inbound;
  const region = smsSettingsOf(channel.settings).default_region;
  const address = normalizePhone(inbound.from.address, region) ?? inbound.from.address;
  return receiveChannelMessage(
    db,
    baseUrl,
    channel,
    { ...message, from: { ...inbound.from, address } },
    store,
    (tx, conversationId) => applySmsKeyword(tx, channel, conversationId, inbound.text, optOutType),
  );
}

/** An SMS, or an MMS with its files, as a provider's webhook brings it. */
export interface SmsWithMedia {
  /** The provider's id (Twilio's `MessageSid`): a retried webhook or job stores nothing twice. */
  providerMessageId: string;
  /** The sender's number as the provider wrote it. */
  from: string;
  text: string;
  files: NonNullable<ChannelInbound["file"]>[];
  /** Files the provider named that could not be fetched (gone, refused, too large). */
  unavailableFiles: number;
  /** Twilio's `OptOutType`. */
  optOutType?: string | null;
}

/**
 * Records an SMS or MMS: the text with the first file as one message (an image with its
 * caption), each further file as a message of its own in the same conversation (provider id
 * `<id>#2`, `#3`...), as an email's attachments are. A STOP or START is read from the text
 * (and Twilio's `OptOutType`) of the first. A file that could not be fetched is noted on the
 * first message (`metadata.media_unavailable`), as on Meta's channels.
 */
export async function receiveSmsWithMedia(
  db: Database,
  baseUrl: string,
  channel: ChannelRow,
  sms: SmsWithMedia,
  store: AttachmentStore,
): Promise<ReceiveOutcome> {
  const [first, ...rest] = sms.files;
  const from = { address: sms.from, name: null };
  const outcome = await receiveSms(
    db,
    baseUrl,
    channel,
    {
      providerMessageId: sms.providerMessageId,
      from,
      type: first ? inboundMediaType(first.contentType) : "text",
      // A caption only where there is one: an MMS of pictures alone has no text.
      text: first && sms.text.length === 0 ? null : sms.text,
      file: first ?? null,
      ...(sms.unavailableFiles > 0 ? { metadata: { media_unavailable: true } } : {}),
      optOutType: sms.optOutType ?? null,
    },
    store,
  );
  // No early return on a duplicate: a retried job after a partly stored MMS stores what is missing.
  for (const [index, file] of rest.entries()) {
    await receiveSms(
      db,
      baseUrl,
      channel,
      {
        providerMessageId: `${sms.providerMessageId}#${index + 2}`,
        from,
        type: inboundMediaType(file.contentType),
        text: null,
        file,
      },
      store,
    );
  }
  return outcome;
}

/**
 * What an inbound SMS's text (or Twilio's `OptOutType`) says of the sender's wish: a stop
 * word opts the conversation's contact out on the channel (once: a second STOP keeps the
 * first date), a start word opts them back in; anything else changes nothing.
 */
export async function applySmsKeyword(
  tx: Queryable,
  channel: Pick<ChannelRow, "id" | "organizationId" | "environment">,
  conversationId: string,
  text: string | null,
  optOutType?: string | null,
): Promise<void> {
  const keyword = smsOptOutKeyword(text, optOutType);
  if (!keyword) return;
  const tenant = { organizationId: channel.organizationId, environment: channel.environment };
  if (keyword === "stop") await optOut(tx, tenant, channel.id, conversationId, optOutWord(text, optOutType));
  else await optIn(tx, tenant, channel.id, conversationId);
}

/** The word recorded with an opt-out: the text as it matched, or the provider's verdict. */
function optOutWord(text: string | null, optOutType?: string | null): string {
  return (optOutType?.trim() || text?.trim() || "STOP").toUpperCase();
}

function contactOf(tenant: TenantScope, conversationId: string) {
  return sql`(select ${conversations.contactId} from ${conversations}
    where ${conversations.id} = ${conversationId}
      and ${conversations.organizationId} = ${tenant.organizationId}
      and ${conversations.environment} = ${tenant.environment})`;
}

async function optOut(tx: Queryable, tenant: TenantScope, channelId: string, conversationId: string, keyword: string) {
  await tx.execute(sql`
    insert into ${smsOptOuts} (id, organization_id, environment, contact_id, channel_id, keyword)
    values (${newId("smsOptOut")}, ${tenant.organizationId}, ${tenant.environment},
            ${contactOf(tenant, conversationId)}, ${channelId}, ${keyword})
    on conflict do nothing`);
}

async function optIn(tx: Queryable, tenant: TenantScope, channelId: string, conversationId: string) {
  await tx
    .delete(smsOptOuts)
    .where(
      and(
        eq(smsOptOuts.organizationId, tenant.organizationId),
        eq(smsOptOuts.contactId, contactOf(tenant, conversationId)),
        eq(smsOptOuts.channelId, channelId),
      ),
    );
}
