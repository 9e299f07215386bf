import { attemptWebhook, attemptWebhookBatch, MAX_WEBHOOK_JOB_ATTEMPTS } from "@parley/core";
import type { Task } from "graphile-worker";
import { z } from "zod";
import type { WorkerContext } from "../context.js";

/** One attempt of one event (a retry, or a first attempt queued alone), or the first attempts of several (the relay's). */
const payloadSchema = z.union([
  z.object({ event_id: z.string(), endpoint_id: z.string(), attempt: z.number().int().min(1) }),
  z.object({ event_ids: z.array(z.string()).min(1), endpoint_id: z.string() }),
]);

/**
 * One scheduled attempt of one event to one endpoint, or the first attempts of several
 * events to one endpoint in order (the relay's jobs, see attemptWebhookBatch). A failure records the attempt and
 * schedules the next one of decisions.md's schedule in the same transaction; the job
 * itself succeeds, so graphile-worker only re-runs it if the worker died mid-attempt
 * (at-least-once: the receiver deduplicates on the envelope `id`).
 *
 * An endpoint that already has its share of this worker's slots (`EndpointSlots`) does
 * not get another: the job is queued again, unchanged and as early as it was, and this
 * slot goes to another endpoint's delivery.
 */
export function deliverWebhook(context: WorkerContext): Task {
  return async (rawPayload, helpers) => {
    const payload = payloadSchema.parse(rawPayload);
    if (!context.webhookSlots.take(payload.endpoint_id)) {
      await helpers.addJob("deliver_webhook", payload, {
        runAt: helpers.job.run_at,
        maxAttempts: MAX_WEBHOOK_JOB_ATTEMPTS,
        flags: [payload.endpoint_id],
      });
      return;
    }
    const started = performance.now();
    let slowestAttemptMs: number | undefined;
    try {
      slowestAttemptMs = await deliver(context, payload);
    } finally {
      // The slowest attempt says whether the endpoint counts as slow (the whole job when it failed).
      context.webhookSlots.release(payload.endpoint_id, slowestAttemptMs ?? performance.now() - started);
    }
  };
}

/** Makes the job's attempts; gives how long the slowest one took. */
async function deliver(context: WorkerContext, payload: z.infer<typeof payloadSchema>): Promise<number> {
  if ("event_ids" in payload) {
    const attempts = await attemptWebhookBatch(context.db, context.webhookSender, {
      endpointId: payload.endpoint_id,
      eventIds: payload.event_ids,
      fastRetry: context.webhookFastRetry,
    });
    for (const attempt of attempts) context.metrics?.webhookAttempt(attempt.succeeded, attempt.durationMs);
    return Math.max(0, ...attempts.map((attempt) => attempt.durationMs));
  }
  const row = await attemptWebhook(context.db, context.webhookSender, {
    endpointId: payload.endpoint_id,
    eventId: payload.event_id,
    attempt: payload.attempt,
    automatic: true,
    fastRetry: context.webhookFastRetry,
  });
  if (row) context.metrics?.webhookAttempt(row.succeeded, row.durationMs);
  return row?.durationMs ?? 0;
}
