import { messages, type Queryable } from "@parley/db";
import type { MessageStatus } from "@parley/schema";
import { and, eq, inArray } from "drizzle-orm";
import { loadConversationOfMessage } from "../conversations/load.js";
import { recordEvent } from "../events/record-event.js";
import { loadMessages } from "./serialize.js";

const rank: Record<MessageStatus, number> = { queued: 0, sent: 1, delivered: 2, read: 3, failed: 99 };

/** A move the state machine made, for counting it (metrics): never an id or a text. */
export interface AppliedStatus {
  /** The type of the message's channel; null for a conversation without one. */
  channelType: string | null;
  status: StatusUpdate["status"];
  errorCode?: string;
}

export interface StatusUpdate {
  status: Exclude<MessageStatus, "queued">;
  error?: { code: string; message: string };
  providerMessageId?: string;
}

/**
 * The message state machine. States only move forward (`queued -> sent -> delivered ->
 * read`); `failed` only from `queued` or `sent`; a failed message, or one without a
 * status (inbound, manual record), never changes. Each applied move records its event in
 * the caller's transaction. Returns whether the update applied; `onApplied` hears of it too,
 * with the channel's type (counted once the caller's transaction committed, ideally).
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
  onApplied?: (applied: AppliedStatus) => void,
): Promise<boolean> {
  // The move is checked by the update itself (a status it may move from), which locks the
  // row: a concurrent update waits and then finds the status it left. The conversation is
  // read beside it, by the message's id: one round trip.
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
      .where(and(eq(messages.id, messageId), inArray(messages.status, MOVES_TO[update.status])))
      .returning(),
    loadConversationOfMessage(tx, messageId),
  ]);
  if (!row || !conversation) return false;
  const [message] = await loadMessages(baseUrl, tx, [row]);
  if (!message) return false;
  const tenant = { organizationId: row.organizationId, environment: row.environment };
  await recordEvent(tx, tenant, `message.${update.status}`, { message, conversation });
  onApplied?.({
    channelType: conversation.channel_type,
    status: update.status,
    ...(update.status === "failed" && update.error ? { errorCode: update.error.code } : {}),
  });
  return true;
}

const STATUSES = Object.keys(rank) as MessageStatus[];

/** For each status a message may move to, the statuses it may move from (canMove). */
const MOVES_TO = Object.fromEntries(
  STATUSES.map((next) => [next, STATUSES.filter((current) => next !== "queued" && canMove(current, next))]),
) as Record<StatusUpdate["status"], MessageStatus[]>;
