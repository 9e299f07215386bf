import {
  fetchInboundMedia,
  isMetaChannelFor,
  type MetaWebhookItem,
  parseMetaWebhook,
  TemporaryChannelError,
} from "@parley/channels";
import { applyMessageStatus, channelSettings, findOutboundMessage, receiveChannelMessage } from "@parley/core";
import { channels, conversations, messages } from "@parley/db";
import { and, eq, inArray, lte, ne } from "drizzle-orm";
import type { Task } from "graphile-worker";
import { z } from "zod";
import type { WorkerContext } from "../context.js";

/** Written by the API after the signature checked out: the body and the channels it may touch. */
const payloadSchema = z.object({ channel_ids: z.array(z.string()), payload: z.unknown() });

type ChannelRow = typeof channels.$inferSelect;

/**
 * One webhook delivery from Meta, processed after the API answered 200: inbound
 * messages (stored once per provider id, so Meta's retries and this job's own retries
 * change nothing) and receipts applied to the message state machine.
 */
export function receiveMetaWebhook(context: WorkerContext): Task {
  return async (rawPayload) => {
    const { channel_ids: channelIds, payload } = payloadSchema.parse(rawPayload);
    if (channelIds.length === 0) return;
    // A channel disconnected since the API took the delivery receives nothing of it.
    const rows = await context.db
      .select()
      .from(channels)
      .where(and(inArray(channels.id, channelIds), ne(channels.status, "disconnected")));
    for (const item of parseMetaWebhook(payload)) {
      const channel = rows.find((row) => isMetaChannelFor(row, item.channel));
      if (!channel) continue;
      await applyItem(context, channel, item);
    }
  };
}

async function applyItem(context: WorkerContext, channel: ChannelRow, item: MetaWebhookItem) {
  if (item.kind === "message") return receiveItem(context, channel, item);
  if (item.kind === "status") {
    return context.db.transaction(async (tx) => {
      // By Parley's id too: WhatsApp echoes it (`biz_opaque_callback_data`), so a receipt may beat the send's answer.
      const messageId = await findOutboundMessage(tx, channel, {
        providerMessageId: item.providerMessageId,
        messageId: item.callbackData,
      });
      if (!messageId) return;
      const update = {
        status: item.status,
        providerMessageId: item.providerMessageId,
        ...(item.error ? { error: item.error } : {}),
      };
      await applyMessageStatus(tx, context.publicBaseUrl, messageId, update, context.metrics?.statusApplied);
    });
  }
  // Messenger reports reading (and sometimes arrival) as "everything before this instant".
  const status = item.kind === "read_watermark" ? "read" : "delivered";
  const before = item.kind === "read_watermark" ? ["sent", "delivered"] : ["sent"];
  return context.db.transaction(async (tx) => {
    const rows = await tx
      .select({ id: messages.id })
      .from(messages)
      .innerJoin(conversations, eq(conversations.id, messages.conversationId))
      .where(
        and(
          eq(conversations.channelId, channel.id),
          eq(conversations.recipient, item.contactId),
          eq(messages.direction, "outbound"),
          inArray(messages.status, before as ("sent" | "delivered")[]),
          lte(messages.createdAt, item.watermark),
        ),
      );
    for (const row of rows) {
      await applyMessageStatus(tx, context.publicBaseUrl, row.id, { status }, context.metrics?.statusApplied);
    }
  });
}

async function receiveItem(
  context: WorkerContext,
  channel: ChannelRow,
  item: Extract<MetaWebhookItem, { kind: "message" }>,
) {
  const file = item.media ? await fetchMedia(context, channel, item) : null;
  const unavailable = item.media !== null && file === null;
  await receiveChannelMessage(
    context.db,
    context.publicBaseUrl,
    channel,
    {
      providerMessageId: item.providerMessageId,
      from: { address: item.from.id, name: item.from.name },
      type: unavailable ? "text" : item.type,
      text: item.text,
      file,
      ...(unavailable ? { metadata: { media_unavailable: true } } : {}),
    },
    context.keys.attachmentStore,
  );
}

/** A temporary fault retries the job; a file the provider no longer serves is noted, not fatal. */
async function fetchMedia(
  context: WorkerContext,
  channel: ChannelRow,
  item: Extract<MetaWebhookItem, { kind: "message" }>,
) {
  if (!item.media) return null;
  const settings = channelSettings(context.keys.secretBox, channel);
  try {
    return await fetchInboundMedia(context.adapters.meta, String(settings.access_token ?? ""), item.media);
  } catch (error) {
    if (error instanceof TemporaryChannelError) throw error;
    context.logger.warn(
      { channelId: channel.id, providerMessageId: item.providerMessageId, reason: (error as Error).message },
      "inbound media could not be fetched",
    );
    return null;
  }
}
