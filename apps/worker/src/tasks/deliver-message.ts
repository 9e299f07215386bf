import { setTimeout as sleep } from "node:timers/promises";
import { adapterFor, type SendResult, smsOptOutRefusal, TemporaryChannelError } from "@parley/channels";
import {
  type AppliedStatus,
  applyMessageStatuses,
  type DeliveryWork,
  loadDeliveryWorks,
  noteProviderRefusal,
} from "@parley/core";
import { isLostConnection, messages, postgresClientOf, type Queryable } from "@parley/db";
import { withSpan } from "@parley/tracing";
import { and, eq, isNull } from "drizzle-orm";
import type { Task } from "graphile-worker";
import { z } from "zod";
import type { WorkerContext } from "../context.js";
import { applyReceiptsInOrder, dueReceipts } from "./receipts.js";

/**
 * The relay's jobs carry the messages of one channel (`message_ids`, see messageRelay); a
 * message split off a batch to be retried carries the attempts it already had.
 */
const payloadSchema = z.union([
  z.object({
    message_ids: z.array(z.string()).min(1),
    /** Tracing on: each message's trace (its send's), beside `message_ids`. */
    traceparents: z.array(z.string().nullable()).optional(),
    attempts_before: z.number().int().min(0).default(0),
  }),
  z.object({
    message_id: z.string(),
    traceparent: z.string().optional(),
    attempts_before: z.number().int().min(0).default(0),
  }),
]);

/** Each message's traceparent, by id, as the payload carries them. */
function traceparentsOf(payload: z.infer<typeof payloadSchema>): Map<string, string> {
  if ("message_id" in payload) return new Map(payload.traceparent ? [[payload.message_id, payload.traceparent]] : []);
  return new Map(
    payload.message_ids.flatMap((id, index) => {
      const traceparent = payload.traceparents?.[index];
      return traceparent ? [[id, traceparent] as const] : [];
    }),
  );
}

/** The attempts graphile-worker gives a job; a temporary fault on the last one fails the message. */
export const DELIVERY_MAX_ATTEMPTS = 10;

type Outcome =
  | { work: DeliveryWork; result: SendResult }
  /** A temporary fault before the last attempt: the message is tried again later. */
  | { work: DeliveryWork; retry: unknown };

/**
 * Hands queued messages to their channel's adapter, one after another in the job's order
 * (each channel paced to its provider's rate, see ChannelPace), and records the answers:
 * a real provider's each at once (recordAnswer), the sandbox's all in one transaction at
 * the end, with the statuses and events of each step (sent, then the receipts due at once)
 * by a statement per kind of row for the whole batch. Only a `queued` message is sent, so
 * a retried or duplicated job delivers it once; a failed message is never sent again. A
 * worker that dies mid-batch leaves the job to be run again: the one message in its hands
 * at a real provider is sent again (at least once to the provider), none is lost.
 *
 * One message's fault does not fail its batch: a refusal fails that message alone, and a
 * temporary fault puts it in a job of its own, due after graphile-worker's backoff
 * (exp(attempt) s) and counting its attempts on; the batch stops there (the provider may
 * be down: as a webhook batch, it waits on one timeout, not on every message) and the
 * messages after it go back to the queue as a job, due at once. So does the rest of a
 * batch when the worker stops (`abortSignal`). A job of one message is retried by
 * graphile-worker itself, as before batches.
 */
export function deliverMessage(context: WorkerContext): Task {
  return async (rawPayload, helpers) => {
    const payload = payloadSchema.parse(rawPayload);
    const messageIds = "message_ids" in payload ? payload.message_ids : [payload.message_id];
    const before = payload.attempts_before;
    const attempt = helpers.job.attempts + before;
    const lastAttempt = attempt >= Math.min(helpers.job.max_attempts + before, DELIVERY_MAX_ATTEMPTS);
    const works = await loadDeliveryWorks(context.db, context.keys, context.publicBaseUrl, messageIds, attempt);
    const traces = traceparentsOf(payload);
    const queued = works.filter((work) => work.status === "queued");
    const outcomes: Outcome[] = [];
    let unattempted: DeliveryWork[] = [];
    for (const [index, work] of queued.entries()) {
      // The worker is stopping (graphile-worker's graceful shutdown ran out of patience):
      // what was sent is recorded, the rest goes back to the queue.
      if (helpers.abortSignal?.aborted) {
        unattempted = queued.slice(index);
        break;
      }
      try {
        const result = await attemptInItsTrace(work, traces, () => attemptSend(work, context, lastAttempt));
        if (recordsEachAnswer(work)) await recordAnswer(context, { work, result }, traces);
        else outcomes.push({ work, result });
      } catch (error) {
        // Alone in its job: graphile-worker retries the job with its backoff.
        if (messageIds.length === 1) throw error;
        // The provider may be down: the batch stops here rather than wait on every message.
        outcomes.push({ work, retry: error });
        unattempted = queued.slice(index + 1);
        break;
      }
    }
    if (outcomes.length === 0 && unattempted.length === 0) return;
    // The answers, and the jobs of the messages to retry or still to send, exist together or
    // not at all. The last statements are left in flight and COMMIT follows them in the same
    // round trip: `written` tells whether they, and so the transaction, succeeded.
    const { written, count } = await context.db.transaction(async (tx) => {
      const requeued = inFlight(
        Promise.all([queueRetries(tx, outcomes, attempt), queueUnattempted(tx, unattempted, attempt - 1)]),
      );
      const recorded = await recordOutcomes(tx, context, outcomes, traces);
      return { written: inFlight(Promise.all([requeued, recorded.written])), count: recorded.count };
    });
    await written;
    count();
  };
}

/**
 * A real provider's answer is recorded before the next message of the batch goes out: a
 * worker killed mid-batch has then sent again at most the one message in its hands (the
 * soak counted up to 3 duplicate WhatsApp and email sends at one kill, each batch's
 * sends so far). The sandbox, which sends to nobody, records its batch in one transaction.
 */
function recordsEachAnswer(work: DeliveryWork): boolean {
  return work.channel.provider !== "sandbox";
}

/** How long a provider's answer is held while the database is away, before the job fails (and sends again). */
const RECORD_PATIENCE_MS = 120_000;

/**
 * Records one provider's answer in its own transaction. When the database went away (a
 * restart, a failover) the answer is kept and the write tried again until it is back:
 * failing the job instead would send the message to the provider a second time.
 */
async function recordAnswer(context: WorkerContext, outcome: Outcome, traces: Map<string, string>): Promise<void> {
  const deadline = Date.now() + RECORD_PATIENCE_MS;
  for (let attempt = 0; ; attempt++) {
    try {
      const { written, count } = await context.db.transaction(async (tx) =>
        recordOutcomes(tx, context, [outcome], traces),
      );
      await written;
      count();
      return;
    } catch (error) {
      if (!isLostConnection(error) || Date.now() > deadline) throw error;
      await sleep(Math.min(2_000, 100 * 2 ** attempt));
    }
  }
}

/** A statement awaited later, once its transaction has ended: never left unhandled meanwhile. */
function inFlight<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}

/**
 * The job's span continues the trace of its first message's send (job-span.ts); the other
 * messages of the batch are sent in a span of their own trace, so each send's trace shows
 * its provider call.
 */
function attemptInItsTrace(
  work: DeliveryWork,
  traces: Map<string, string>,
  attempt: () => Promise<SendResult>,
): Promise<SendResult> {
  const traceparent = ownTraceparent(traces, work.message.id);
  return traceparent ? withSpan("deliver message", { traceparent }, attempt) : attempt();
}

/** The message's traceparent where it is not the job's own (the batch's first, job-span.ts). */
function ownTraceparent(traces: Map<string, string>, messageId: string): string | undefined {
  const traceparent = traces.get(messageId);
  return traceparent === traces.values().next().value ? undefined : traceparent;
}

/**
 * Records the batch's answers: their statuses and events (applyMessageStatuses), then the
 * receipts still to come. Resolves once every statement is sent, the last ones still in
 * flight (`written`, to await once the transaction has ended). `count` adds the answers to
 * the metrics: called once they are written, so a write tried again counts them once.
 */
async function recordOutcomes(
  tx: Queryable,
  context: WorkerContext,
  outcomes: readonly Outcome[],
  traces: Map<string, string>,
): Promise<{ written: Promise<unknown>; count: () => void }> {
  const answered = outcomes.flatMap((outcome) => ("result" in outcome ? [outcome] : []));
  const count = () => {
    for (const { work, result } of answered) {
      if (result.outcome === "failed") context.metrics?.message(work.channel.type, "failed", result.error.code);
      else context.metrics?.message(work.channel.type, "sent");
    }
  };
  const updates = answered.map(({ work, result }) => {
    // Its event continues the message's own trace (the job's, for the first of the batch).
    const traceparent = ownTraceparent(traces, work.message.id);
    if (result.outcome === "failed") {
      return { messageId: work.message.id, status: "failed" as const, error: result.error, traceparent };
    }
    return {
      messageId: work.message.id,
      status: "sent" as const,
      providerMessageId: result.providerMessageId,
      traceparent,
      // The receipts due at once (the sandbox's) are applied with the send, in the same statements.
      following: dueReceipts(result.receipts),
    };
  });
  const countReceipt = (applied: AppliedStatus) => {
    if (applied.following) context.metrics?.statusApplied(applied);
  };
  const { moved, written } = await applyMessageStatuses(tx, context.publicBaseUrl, updates, countReceipt);
  const followUps = answered.map(({ work, result }) => {
    if (result.outcome !== "sent") return undefined;
    // A provider's webhook may report `delivered` before the send's answer is stored:
    // the state already moved on, but receipts still need the provider's id to match.
    if (!moved.has(work.message.id)) return rememberProviderId(tx, work.message.id, result.providerMessageId);
    // The first receipt still to come is queued, carrying the ones after it.
    const later = result.receipts.slice(dueReceipts(result.receipts).length);
    return applyReceiptsInOrder(tx, context.publicBaseUrl, work.message.id, later, context.metrics?.statusApplied);
  });
  // In flight, with the events: the caller's COMMIT follows them.
  return { written: inFlight(Promise.all([written, ...followUps])), count };
}

/**
 * The messages of the batch that met a temporary fault, each in a job of its own, due
 * when graphile-worker would have retried it (exp(attempt) s), its attempts counted on.
 */
async function queueRetries(tx: Queryable, outcomes: readonly Outcome[], attempt: number) {
  const retries = outcomes.flatMap((outcome) => ("retry" in outcome ? [outcome.work.message.id] : []));
  if (retries.length === 0) return;
  const delayMs = Math.round(Math.exp(Math.min(attempt, 10)) * 1000);
  await postgresClientOf(tx)`
    select graphile_worker.add_jobs(array(
      select row('deliver_message', json_build_object('message_ids', array[message_id], 'attempts_before', ${attempt}::int),
                 null, now() + ${`${delayMs} milliseconds`}::interval, ${DELIVERY_MAX_ATTEMPTS - attempt}::int,
                 null, null, null)::graphile_worker.job_spec
      from unnest(${retries}::text[]) as message_id
    ))`;
}

/** Messages of the batch not tried in this run, as one job again, due now, with the attempts they had before it. */
async function queueUnattempted(tx: Queryable, unattempted: readonly DeliveryWork[], attemptsBefore: number) {
  if (unattempted.length === 0) return;
  const payload = JSON.stringify({
    message_ids: unattempted.map((work) => work.message.id),
    attempts_before: attemptsBefore,
  });
  await postgresClientOf(tx)`
    select graphile_worker.add_job('deliver_message', ${payload}::json,
                                   max_attempts => ${DELIVERY_MAX_ATTEMPTS - attemptsBefore}::smallint)`;
}

async function attemptSend(work: DeliveryWork, context: WorkerContext, lastAttempt: boolean): Promise<SendResult> {
  if (work.settingsError) return misconfigured(work.settingsError);
  if (work.channel.status === "disconnected") return disconnected(work.channel.id);
  // The contact texted STOP on this channel: the provider would refuse (Twilio 21610), so it is not asked.
  if (work.message.optedOut) return { outcome: "failed", error: smsOptOutRefusal(work.channel.provider) };
  // The opened settings: an SMS adapter's pace depends on them (the sender's kind, `mps`).
  const adapter = adapterFor({ ...work.channel, settings: work.message.channel.settings }, context.adapters);
  if (!adapter) return unavailable(work.channel.provider);
  await context.channelPace.take(work.channel.id, adapter.messagesPerSecond);
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
