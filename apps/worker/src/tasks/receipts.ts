import type { Receipt } from "@parley/channels";
import { type AppliedStatus, applyMessageStatus, type StatusUpdate } from "@parley/core";
import type { Queryable } from "@parley/db";
import { sql } from "drizzle-orm";
import { z } from "zod";

/** A receipt still to come, its delay counted from the receipt that carries it. */
export const laterReceiptSchema = z.object({
  status: z.enum(["delivered", "read", "failed"]),
  after_ms: z.number().int().min(0),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});

export type LaterReceipt = z.infer<typeof laterReceiptSchema>;

/**
 * The sandbox's receipts of a message, in their order: those due now are applied at once,
 * and the first later one is queued (`apply_receipt`) carrying the rest, which it queues
 * in turn once applied. Two jobs queued side by side could run in either order when both
 * are due (a worker that polls finds them together): a `read` applied first made the
 * `delivered` behind it a late receipt, and the message never showed `delivered`.
 * `receipts` count their delays from now; `onApplied` hears of each one applied (metrics).
 */
export async function applyReceiptsInOrder(
  tx: Queryable,
  publicBaseUrl: string,
  messageId: string,
  receipts: readonly Receipt[],
  onApplied?: (applied: AppliedStatus) => void,
): Promise<void> {
  for (const [index, receipt] of receipts.entries()) {
    if (receipt.afterMs > 0) {
      const rest = receipts.slice(index + 1).map((later) => ({
        status: later.status,
        after_ms: Math.max(0, later.afterMs - receipt.afterMs),
        ...(later.error ? { error: later.error } : {}),
      }));
      await scheduleReceipt(tx, messageId, receipt, rest);
      return;
    }
    await applyMessageStatus(tx, publicBaseUrl, messageId, statusUpdateOf(receipt), onApplied);
  }
}

/**
 * A send's receipts due now, those before the first one with a delay, as the status
 * updates that follow the send (applyMessageStatuses' `following`); the rest are left to
 * applyReceiptsInOrder, which queues the first of them.
 */
export function dueReceipts(receipts: readonly Receipt[]): StatusUpdate[] {
  const firstLater = receipts.findIndex((receipt) => receipt.afterMs > 0);
  return receipts.slice(0, firstLater === -1 ? receipts.length : firstLater).map(statusUpdateOf);
}

function statusUpdateOf(receipt: Receipt): StatusUpdate {
  return { status: receipt.status, ...(receipt.error ? { error: receipt.error } : {}) };
}

/** The receipts an applied one carried, their delays counted from now. */
export function receiptsAfter(later: readonly LaterReceipt[]): Receipt[] {
  return later.map((receipt) => ({
    status: receipt.status,
    afterMs: receipt.after_ms,
    ...(receipt.error ? { error: receipt.error } : {}),
  }));
}

async function scheduleReceipt(tx: Queryable, messageId: string, receipt: Receipt, following: LaterReceipt[]) {
  const payload = JSON.stringify({
    message_id: messageId,
    status: receipt.status,
    ...(receipt.error ? { error: receipt.error } : {}),
    ...(following.length > 0 ? { following } : {}),
  });
  await tx.execute(
    sql`select graphile_worker.add_job('apply_receipt', ${payload}::json, run_at => now() + ${`${receipt.afterMs} milliseconds`}::interval, max_attempts => 5::smallint)`,
  );
}
