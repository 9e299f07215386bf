import { messages, type Queryable, reusableQuery } from "@parley/db";
import type { MessageStatus } from "@parley/schema";
import { eq, sql } from "drizzle-orm";
import { loadConversation } from "../conversations/load.js";
import { recordEvent } from "../events/record-event.js";
import { loadMessages } from "./serialize.js";

const rank: Record<MessageStatus, number> = { queued: 0, sent: 1, delivered: 2, read: 3, failed: 99 };

export interface StatusUpdate {
  status: Exclude<MessageStatus, "queued">;
  error?: { code: string; message: string };
  providerMessageId?: string;
}

/**
 * The message state machine. States only move forward (`queued -> sent -> delivered ->
 * read`); `failed` only from `queued` or `sent`; a failed message, or one without a
 * status (inbound, manual record), never changes. Each applied move records its event in
 * the caller's transaction. Returns whether the update applied.
 */
export function canMove(current: MessageStatus | null, next: StatusUpdate["status"]): boolean {
  if (current === null || current === "failed") return false;
  if (next === "failed") return current === "queued" || current === "sent";
  return rank[next] > rank[current];
}

export async function applyMessageStatus(
  tx: Queryable,
  baseUrl: string,
  messageId: string,
  update: StatusUpdate,
): Promise<boolean> {
  const [current] = await lockMessageQuery(tx, { id: messageId });
  if (!current || !canMove(current.status, update.status)) return false;
  // The conversation is read beside the update: one round trip.
  const [[row], conversation] = await Promise.all([
    tx
      .update(messages)
      .set({
        status: update.status,
        updatedAt: new Date(),
        ...(update.status === "failed" && update.error
          ? { errorCode: update.error.code, errorMessage: update.error.message }
          : {}),
        ...(update.providerMessageId ? { providerMessageId: update.providerMessageId } : {}),
      })
      .where(eq(messages.id, messageId))
      .returning(),
    loadConversation(tx, current.conversationId),
  ]);
  if (!row) return false;
  const [message] = await loadMessages(baseUrl, tx, [row]);
  if (!message) return false;
  const tenant = { organizationId: row.organizationId, environment: row.environment };
  await recordEvent(tx, tenant, `message.${update.status}`, { message, conversation });
  return true;
}

// Every status change (sent, delivered, read, failed) starts here: built once (see reusableQuery).
const lockMessageQuery = reusableQuery((db) =>
  db
    .select()
    .from(messages)
    .where(eq(messages.id, sql.placeholder("id")))
    .for("update")
    .prepare("lock_message"),
);
