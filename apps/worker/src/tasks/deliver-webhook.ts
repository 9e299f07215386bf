import { attemptWebhook, MAX_WEBHOOK_JOB_ATTEMPTS } from "@parley/core";
import type { Task } from "graphile-worker";
import { z } from "zod";
import type { WorkerContext } from "../context.js";

const payloadSchema = z.object({
  event_id: z.string(),
  endpoint_id: z.string(),
  attempt: z.number().int().min(1),
});

/**
 * One scheduled attempt of one event to one endpoint. A failure records the attempt and
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
    try {
      await attemptWebhook(context.db, context.webhookSender, {
        endpointId: payload.endpoint_id,
        eventId: payload.event_id,
        attempt: payload.attempt,
        automatic: true,
        fastRetry: context.webhookFastRetry,
      });
    } finally {
      context.webhookSlots.release(payload.endpoint_id, performance.now() - started);
    }
  };
}
