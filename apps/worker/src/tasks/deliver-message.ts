import { adapterFor, type SendResult, TemporaryChannelError } from "@parley/channels";
import { applyMessageStatus, type DeliveryWork, loadDeliveryWork, noteProviderRefusal } from "@parley/core";
import { messages, type Queryable } from "@parley/db";
import { and, eq, isNull } from "drizzle-orm";
import type { Task } from "graphile-worker";
import { z } from "zod";
import type { WorkerContext } from "../context.js";
import { applyReceiptsInOrder } from "./receipts.js";

const payloadSchema = z.object({ message_id: z.string() });

/** The attempts graphile-worker gives a job; a temporary fault on the last one fails the message. */
export const DELIVERY_MAX_ATTEMPTS = 10;

/**
 * Hands one queued message to its channel's adapter and applies the answer. Only a
 * `queued` message is sent, so a retried or duplicated job delivers it once; a failed
 * message is never sent again.
 */
export function deliverMessage(context: WorkerContext): Task {
  return async (rawPayload, helpers) => {
    const { message_id: messageId } = payloadSchema.parse(rawPayload);
    const attempt = helpers.job.attempts;
    const work = await loadDeliveryWork(context.db, context.keys, context.publicBaseUrl, messageId, attempt);
    if (!work || work.status !== "queued") return;
    const lastAttempt = attempt >= Math.min(helpers.job.max_attempts, DELIVERY_MAX_ATTEMPTS);
    const result = await attemptSend(work, context, lastAttempt);
    await context.db.transaction(async (tx) => {
      if (result.outcome === "failed") {
        await applyMessageStatus(tx, context.publicBaseUrl, messageId, { status: "failed", error: result.error });
        context.metrics?.message(work.channel.type, "failed", result.error.code);
        return;
      }
      context.metrics?.message(work.channel.type, "sent");
      const sent = await applyMessageStatus(tx, context.publicBaseUrl, messageId, {
        status: "sent",
        providerMessageId: result.providerMessageId,
      });
      if (!sent) {
        // A provider's webhook may report `delivered` before the send's answer is stored:
        // the state already moved on, but receipts still need the provider's id to match.
        await rememberProviderId(tx, messageId, result.providerMessageId);
        return;
      }
      await applyReceiptsInOrder(tx, context.publicBaseUrl, messageId, result.receipts, context.metrics?.statusApplied);
    });
  };
}

async function attemptSend(work: DeliveryWork, context: WorkerContext, lastAttempt: boolean): Promise<SendResult> {
  if (work.settingsError) return misconfigured(work.settingsError);
  if (work.channel.status === "disconnected") return disconnected(work.channel.id);
  const adapter = adapterFor(work.channel, context.adapters);
  if (!adapter) return unavailable(work.channel.provider);
  const result = await sendOrRetry(() => adapter.send(work.message), lastAttempt);
  // A token the provider reports expired marks the channel `needs_attention` (issue 24 item 9).
  if (result.outcome === "failed") await noteProviderRefusal(context.db, work.channel, result.error);
  return result;
}

function disconnected(channelId: string): SendResult {
  const message = `Channel '${channelId}' was disconnected before this message went out; reconnect it to send again`;
  return { outcome: "failed", error: { code: "channel_disconnected", message } };
}

/** A temporary fault is retried by the job (graphile-worker's backoff) until the last attempt. */
async function sendOrRetry(send: () => Promise<SendResult>, lastAttempt: boolean): Promise<SendResult> {
  try {
    return await send();
  } catch (error) {
    if (!lastAttempt) throw error;
    const message = error instanceof TemporaryChannelError ? error.message : "The provider could not be reached";
    return { outcome: "failed", error: { code: "provider_unavailable", message } };
  }
}

function misconfigured(reason: string): SendResult {
  return { outcome: "failed", error: { code: "channel_misconfigured", message: reason } };
}

function unavailable(provider: string): SendResult {
  return {
    outcome: "failed",
    error: { code: "channel_unavailable", message: `No delivery adapter for the '${provider}' provider` },
  };
}

async function rememberProviderId(tx: Queryable, messageId: string, providerMessageId: string) {
  await tx
    .update(messages)
    .set({ providerMessageId })
    .where(and(eq(messages.id, messageId), isNull(messages.providerMessageId)));
}
