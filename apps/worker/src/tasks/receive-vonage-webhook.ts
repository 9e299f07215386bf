import { parseVonageWebhook, type VonageWebhookItem } from "@parley/channels";
import { type AppliedStatus, applyMessageStatus, findOutboundMessage, receiveSms } from "@parley/core";
import { channels } from "@parley/db";
import { and, eq, ne } from "drizzle-orm";
import type { Task } from "graphile-worker";
import { z } from "zod";
import type { WorkerContext } from "../context.js";

/**
 * Written by the API once the webhook's signed token checked out with this channel's
 * signature secret: the channel it is for and the body Vonage posted, parsed.
 */
const payloadSchema = z.object({ channel_id: z.string(), body: z.unknown() });

type ChannelRow = typeof channels.$inferSelect;

/**
 * One webhook from Vonage's Messages API, processed after the API answered 200: an inbound
 * SMS goes the way of every SMS provider's (receiveSms: the sender in E.164, the contact by
 * its number, STOP and START), stored once per `message_uuid` so Vonage's retries and this
 * job's change nothing; a status callback moves the outbound message it names along the
 * state machine, which never moves back (a `submitted` after `delivered` changes nothing).
 */
export function receiveVonageWebhook(context: WorkerContext): Task {
  return async (rawPayload) => {
    const { channel_id: channelId, body } = payloadSchema.parse(rawPayload);
    const item = parseVonageWebhook(body);
    if (!item) return;
    // A channel disconnected since the API took the webhook receives nothing of it.
    const [channel] = await context.db
      .select()
      .from(channels)
      .where(and(eq(channels.id, channelId), eq(channels.provider, "vonage"), ne(channels.status, "disconnected")));
    if (!channel) return;
    if (item.kind === "message") return receiveItem(context, channel, item);
    return applyStatus(context, channel, item);
  };
}

async function receiveItem(
  context: WorkerContext,
  channel: ChannelRow,
  item: Extract<VonageWebhookItem, { kind: "message" }>,
) {
  // Vonage's `sms.keyword` is only the first word: STOP counts as the whole text, as for every provider.
  await receiveSms(
    context.db,
    context.publicBaseUrl,
    channel,
    {
      providerMessageId: item.providerMessageId,
      from: { address: item.from, name: null },
      type: "text",
      text: item.text,
    },
    context.keys.attachmentStore,
  );
}

async function applyStatus(
  context: WorkerContext,
  channel: ChannelRow,
  item: Extract<VonageWebhookItem, { kind: "status" }>,
) {
  // Counted once committed: a transaction that rolls back (and is retried) counts nothing.
  const applied: AppliedStatus[] = [];
  await context.db.transaction(async (tx) => {
    // By Vonage's `message_uuid`, or by the `client_ref` Parley sent (its message id): a
    // status may beat the send's answer.
    const messageId = await findOutboundMessage(tx, channel, {
      providerMessageId: item.providerMessageId,
      messageId: item.clientRef,
    });
    if (!messageId) return;
    const update = {
      status: item.status,
      providerMessageId: item.providerMessageId,
      ...(item.error ? { error: item.error } : {}),
    };
    await applyMessageStatus(tx, context.publicBaseUrl, messageId, update, (move) => applied.push(move));
  });
  for (const move of applied) context.metrics?.statusApplied(move);
}
