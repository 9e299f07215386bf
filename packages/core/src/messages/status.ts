import { messages, postgresClientOf, type Queryable } from "@parley/db";
import type { MessageStatus } from "@parley/schema";
import { and, eq, inArray } from "drizzle-orm";
import { loadConversationOfMessage, loadConversationsByIds } from "../conversations/load.js";
import { recordEvent, recordEvents } from "../events/record-event.js";
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

/** A status update of one message, for applyMessageStatuses. */
export interface MessageStatusUpdate extends StatusUpdate {
  messageId: string;
  /** Tracing on: the trace its event continues, where not the current one (a batch's other sends). */
  traceparent?: string | undefined;
}

/**
 * applyMessageStatus for several messages at once, in the caller's transaction: one
 * UPDATE moves every message its update may move (the same state machine, row by row),
 * then the moved messages, their conversations and their events are read and written by
 * a statement each, whatever their number. At most one update per message. Returns the
 * ids of the messages that moved; `onApplied` hears of each, as applyMessageStatus's does.
 */
export async function applyMessageStatuses(
  tx: Queryable,
  baseUrl: string,
  updates: readonly MessageStatusUpdate[],
  onApplied?: (applied: AppliedStatus) => void,
): Promise<Set<string>> {
  if (updates.length === 0) return new Set();
  const failedError = (update: MessageStatusUpdate) => (update.status === "failed" ? update.error : undefined);
  const moved = await postgresClientOf(tx)<{ id: string }[]>`
    update messages as m set
      status = u.status,
      updated_at = now(),
      error_code = coalesce(u.error_code, m.error_code),
      error_message = coalesce(u.error_message, m.error_message),
      provider_message_id = coalesce(u.provider_message_id, m.provider_message_id)
    from unnest(
      ${updates.map((update) => update.messageId)}::text[],
      ${updates.map((update) => update.status)}::text[],
      ${updates.map((update) => MOVES_TO[update.status].join(","))}::text[],
      ${updates.map((update) => failedError(update)?.code ?? null) as string[]}::text[],
      ${updates.map((update) => failedError(update)?.message ?? null) as string[]}::text[],
      ${updates.map((update) => update.providerMessageId ?? null) as string[]}::text[]
    ) as u(id, status, moves_from, error_code, error_message, provider_message_id)
    where m.id = u.id and m.status = any(string_to_array(u.moves_from, ','))
    returning m.id`;
  if (moved.length === 0) return new Set();
  const movedIds = new Set(moved.map((row) => row.id));
  const rows = await tx
    .select()
    .from(messages)
    .where(inArray(messages.id, [...movedIds]));
  const [conversations, serialized] = await Promise.all([
    loadConversationsByIds(tx, [...new Set(rows.map((row) => row.conversationId))]),
    loadMessages(baseUrl, tx, rows),
  ]);
  const rowById = new Map(rows.map((row) => [row.id, row]));
  const messageById = new Map(serialized.map((message) => [message.id, message]));
  // In the order of `updates`: their events are recorded in that order.
  await recordEvents(
    tx,
    updates.flatMap((update) => {
      const row = rowById.get(update.messageId);
      const message = messageById.get(update.messageId);
      const conversation = row ? conversations.get(row.conversationId) : undefined;
      if (!row || !message || !conversation) return [];
      const tenant = { organizationId: row.organizationId, environment: row.environment };
      return [
        {
          tenant,
          type: `message.${update.status}` as const,
          data: { message, conversation },
          traceparent: update.traceparent,
        },
      ];
    }),
  );
  if (onApplied) {
    for (const update of updates) {
      const row = rowById.get(update.messageId);
      if (!row) continue;
      onApplied({
        channelType: conversations.get(row.conversationId)?.channel_type ?? null,
        status: update.status,
        ...(update.status === "failed" && update.error ? { errorCode: update.error.code } : {}),
      });
    }
  }
  return movedIds;
}

const STATUSES = Object.keys(rank) as MessageStatus[];

/** For each status a message may move to, the statuses it may move from (canMove). */
const MOVES_TO = Object.fromEntries(
  STATUSES.map((next) => [next, STATUSES.filter((current) => next !== "queued" && canMove(current, next))]),
) as Record<StatusUpdate["status"], MessageStatus[]>;
