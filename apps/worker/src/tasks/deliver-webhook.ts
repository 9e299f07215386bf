import { attemptWebhook } from "@parley/core";
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
 */
export function deliverWebhook(context: WorkerContext): Task {
  return async (rawPayload) => {
    const payload = payloadSchema.parse(rawPayload);
    await attemptWebhook(context.db, context.webhookSender, {
      endpointId: payload.endpoint_id,
      eventId: payload.event_id,
      attempt: payload.attempt,
      automatic: true,
      fastRetry: context.webhookFastRetry,
    });
  };
}
