import {
  fetchTwilioInboundMedia,
  parseTwilioWebhook,
  TemporaryChannelError,
  type TwilioInboundFile,
  type TwilioWebhookEvent,
  twilioSmsSettings,
} from "@parley/channels";
import { applyMessageStatus, channelSettings, findOutboundMessage, receiveSmsWithMedia } from "@parley/core";
import { channels } from "@parley/db";
import { and, eq, ne } from "drizzle-orm";
import type { Task } from "graphile-worker";
import { z } from "zod";
import type { WorkerContext } from "../context.js";

/** Written by the API once the signature checked out: the channel it was for and Twilio's parameters. */
const payloadSchema = z.object({
  channel_id: z.string(),
  params: z.record(z.string(), z.union([z.string(), z.array(z.string())])),
});

/**
 * A status callback can beat the send's answer (Twilio calls back while the worker still
 * records the message's sid): the job is retried (graphile-worker's backoff: about 3, 7
 * and 20 s) until the message is known, then dropped as about no message of Parley's.
 */
const STATUS_LOOKUP_ATTEMPTS = 4;

type ChannelRow = typeof channels.$inferSelect;
type Inbound = Extract<TwilioWebhookEvent, { kind: "inbound" }>;
type Status = Extract<TwilioWebhookEvent, { kind: "status" }>;

/**
 * One webhook from Twilio, processed after the API answered 200: an incoming SMS or MMS
 * (its files fetched and stored, a STOP or Twilio's `OptOutType` applied; stored once per
 * `MessageSid`, so Twilio's retries and this job's change nothing), or a status callback
 * moving the message it names (monotonic: a late `sent` after `delivered` changes nothing).
 */
export function receiveTwilioWebhook(context: WorkerContext): Task {
  return async (rawPayload, helpers) => {
    const { channel_id: channelId, params } = payloadSchema.parse(rawPayload);
    // A channel disconnected since the API took the webhook receives nothing of it.
    const [channel] = await context.db
      .select()
      .from(channels)
      .where(and(eq(channels.id, channelId), eq(channels.provider, "twilio"), ne(channels.status, "disconnected")));
    if (!channel) return;
    const event = parseTwilioWebhook(params);
    if (event.kind === "inbound") return receiveInbound(context, channel, event);
    if (event.kind === "status") {
      const applied = await applyStatus(context, channel, event);
      if (!applied && helpers.job.attempts < STATUS_LOOKUP_ATTEMPTS) {
        throw new Error(`No message with Twilio sid ${event.messageSid} on channel ${channel.id} yet`);
      }
    }
  };
}

async function receiveInbound(context: WorkerContext, channel: ChannelRow, event: Inbound) {
  const files = await fetchFiles(context, channel, event);
  await receiveSmsWithMedia(
    context.db,
    context.publicBaseUrl,
    channel,
    {
      providerMessageId: event.messageSid,
      from: event.from,
      text: event.body,
      files: files.fetched,
      unavailableFiles: files.unavailable,
      optOutType: event.optOutType,
    },
    context.keys.attachmentStore,
  );
}

/**
 * The message's files, with the channel's credentials where Twilio asks for them. A
 * temporary fault retries the job; a file Twilio refuses or no longer serves is counted,
 * not fatal, so the text is still stored.
 */
async function fetchFiles(
  context: WorkerContext,
  channel: ChannelRow,
  event: Inbound,
): Promise<{ fetched: TwilioInboundFile[]; unavailable: number }> {
  if (event.media.length === 0) return { fetched: [], unavailable: 0 };
  const settings = twilioSmsSettings.safeParse(channelSettings(context.keys.secretBox, channel));
  if (!settings.success) return { fetched: [], unavailable: event.media.length };
  const fetched: TwilioInboundFile[] = [];
  for (const media of event.media) {
    try {
      fetched.push(await fetchTwilioInboundMedia(context.adapters.twilio, settings.data, media));
    } catch (error) {
      if (error instanceof TemporaryChannelError) throw error;
      context.logger.warn(
        { channelId: channel.id, providerMessageId: event.messageSid, reason: (error as Error).message },
        "inbound media could not be fetched",
      );
    }
  }
  return { fetched, unavailable: event.media.length - fetched.length };
}

/**
 * Moves the channel's outbound message with this sid; Twilio's `ErrorCode` is the error of
 * `undelivered` and `failed`, untranslated. SMS has no read receipts: a `read` (WhatsApp and
 * RCS only at Twilio) changes nothing. False when no message has the sid.
 */
async function applyStatus(context: WorkerContext, channel: ChannelRow, event: Status): Promise<boolean> {
  if (event.status === "read") return true;
  const status = event.status;
  return context.db.transaction(async (tx) => {
    const messageId = await findOutboundMessage(tx, channel, { providerMessageId: event.messageSid });
    if (!messageId) return false;
    const update = { status, ...(event.error ? { error: event.error } : {}) };
    await applyMessageStatus(tx, context.publicBaseUrl, messageId, update, context.metrics?.statusApplied);
    return true;
  });
}
