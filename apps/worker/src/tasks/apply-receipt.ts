import { type AppliedStatus, applyMessageStatus } from "@parley/core";
import type { Task } from "graphile-worker";
import { z } from "zod";
import type { WorkerContext } from "../context.js";
import { applyReceiptsInOrder, laterReceiptSchema, receiptsAfter } from "./receipts.js";

const payloadSchema = z.object({
  message_id: z.string(),
  status: z.enum(["sent", "delivered", "read", "failed"]),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
  /** The sandbox's receipts that follow this one, queued once it is applied (see applyReceiptsInOrder). */
  following: z.array(laterReceiptSchema).optional(),
});

/** Applies a receipt to the state machine; late or out-of-order receipts change nothing. */
export function applyReceipt(context: WorkerContext): Task {
  return async (rawPayload) => {
    const payload = payloadSchema.parse(rawPayload);
    // Counted once committed: a transaction that rolls back (and is retried) counts nothing.
    const applied: AppliedStatus[] = [];
    const count = (move: AppliedStatus) => applied.push(move);
    await context.db.transaction(async (tx) => {
      await applyMessageStatus(
        tx,
        context.publicBaseUrl,
        payload.message_id,
        { status: payload.status, ...(payload.error ? { error: payload.error } : {}) },
        count,
      );
      const following = receiptsAfter(payload.following ?? []);
      await applyReceiptsInOrder(tx, context.publicBaseUrl, payload.message_id, following, count);
    });
    for (const move of applied) context.metrics?.statusApplied(move);
  };
}
