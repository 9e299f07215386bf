import { messages, postgresClientOf, type Queryable, tableRowOf } from "@parley/db";
import type { Message, MessageStatus } from "@parley/schema";
import { loadConversationsOfMessages } from "../conversations/load.js";
import { recordEvents } from "../events/record-event.js";
import { loadMessages } from "./serialize.js";

const rank: Record<MessageStatus, number> = { queued: 0, sent: 1, delivered: 2, read: 3, failed: 99 };

/** A move the state machine made, for counting it (metrics): never an id or a text. */
export interface AppliedStatus {
  /** The type of the message's channel; null for a conversation without one. */
  channelType: string | null;
  status: StatusUpdate["status"];
  errorCode?: string;
  /** A status that followed another in the same update (a receipt due at once after a send). */
  following?: boolean;
}

export interface StatusUpdate {
  status: Exclude<MessageStatus, "queued">;
  error?: { code: string; message: string };
  providerMessageId?: string;
}

/**
 * The message state machine. States only move forward (`queued -> sent -> delivered ->
 * read`); `failed` only from `queued` or `sent`; a failed message, or one without a
 * status (inbound, manual record), never changes.
 */
export function canMove(current: MessageStatus | null, next: StatusUpdate["status"]): boolean {
  if (current === null || current === "failed") return false;
  if (next === "failed") return current === "queued" || current === "sent";
  return rank[next] > rank[current];
}

/**
 * One message's update (applyMessageStatuses for one): an applied move records its event
 * in the caller's transaction, written before this returns. Returns whether the update
 * applied; `onApplied` hears of it too, with the channel's type (counted once the
 * caller's transaction committed, ideally).
 */
export async function applyMessageStatus(
  tx: Queryable,
  baseUrl: string,
  messageId: string,
  update: StatusUpdate,
  onApplied?: (applied: AppliedStatus) => void,
): Promise<boolean> {
  // Heard once its event is written: a move whose event failed is not counted.
  const heard: AppliedStatus[] = [];
  const { moved, written } = await applyMessageStatuses(tx, baseUrl, [{ ...update, messageId }], (applied) =>
    heard.push(applied),
  );
  await written;
  for (const applied of heard) onApplied?.(applied);
  return moved.has(messageId);
}

/** A status update of one message, for applyMessageStatuses. */
export interface MessageStatusUpdate extends StatusUpdate {
  messageId: string;
  /** Tracing on: the trace its event continues, where not the current one (a batch's other sends). */
  traceparent?: string | undefined;
  /**
   * The statuses that follow at once, in their order (receipts due now, as the sandbox's
   * `delivered`): applied by the same statements, each where the state machine allows it
   * after the ones before, each with its event. The message ends at the last one applied.
   */
  following?: readonly StatusUpdate[] | undefined;
}

/** What applyMessageStatuses did, and its last statement still in flight. */
export interface AppliedStatuses {
  /** The ids of the messages that moved. */
  moved: Set<string>;
  /**
   * The events' statement, left in flight: the caller's COMMIT may follow it in the same
   * round trip. Await it once the transaction has ended: a failure made PostgreSQL roll
   * the transaction back at COMMIT, and only this tells (see sendMessage's `written`).
   */
  written: Promise<unknown>;
}

/**
 * applyMessageStatus for several messages at once, in the caller's transaction, in two
 * round trips whatever their number: one UPDATE moves every message its update may move
 * (the same state machine, row by row) straight to the last status its `following` reach,
 * its rows returned, with the messages' conversations read beside it; then the events of
 * every step are written by one statement, step by step (the updates' own events first,
 * in the order of `updates`, then the first following status of each...), each event's
 * message as it stood at its step. At most one update per message. `onApplied` hears of
 * each step applied, as applyMessageStatus's does.
 */
export async function applyMessageStatuses(
  tx: Queryable,
  baseUrl: string,
  updates: readonly MessageStatusUpdate[],
  onApplied?: (applied: AppliedStatus) => void,
): Promise<AppliedStatuses> {
  if (updates.length === 0) return { moved: new Set(), written: Promise.resolve() };
  const stepsOf = new Map(updates.map((update) => [update.messageId, statusSteps(update)]));
  const lastOf = (update: MessageStatusUpdate) => stepsOf.get(update.messageId)?.at(-1) ?? update;
  const failedError = (update: StatusUpdate) => (update.status === "failed" ? update.error : undefined);
  const [movedRows, conversations] = await Promise.all([
    postgresClientOf(tx)<Record<string, unknown>[]>`
      update messages as m set
        status = u.status,
        updated_at = now(),
        error_code = coalesce(u.error_code, m.error_code),
        error_message = coalesce(u.error_message, m.error_message),
        provider_message_id = coalesce(u.provider_message_id, m.provider_message_id)
      from unnest(
        ${updates.map((update) => update.messageId)}::text[],
        ${updates.map((update) => lastOf(update).status)}::text[],
        ${updates.map((update) => MOVES_TO[update.status].join(","))}::text[],
        ${updates.map((update) => failedError(lastOf(update))?.code ?? null) as string[]}::text[],
        ${updates.map((update) => failedError(lastOf(update))?.message ?? null) as string[]}::text[],
        ${updates.map((update) => update.providerMessageId ?? null) as string[]}::text[]
      ) as u(id, status, moves_from, error_code, error_message, provider_message_id)
      where m.id = u.id and m.status = any(string_to_array(u.moves_from, ','))
      returning m.*`,
    loadConversationsOfMessages(
      tx,
      updates.map((update) => update.messageId),
    ),
  ]);
  if (movedRows.length === 0) return { moved: new Set(), written: Promise.resolve() };
  const rowById = new Map(movedRows.map((raw) => tableRowOf(messages, raw)).map((row) => [row.id, row]));
  // Each applied step, step by step: the message of its event as it stood then.
  const applied = stepByStep(updates, stepsOf).flatMap(({ update, step, index }) => {
    const row = rowById.get(update.messageId);
    const conversation = row ? conversations.get(row.conversationId) : undefined;
    if (!row || !conversation) return [];
    const last = index === (stepsOf.get(update.messageId)?.length ?? 1) - 1;
    // Only `failed` sets an error, and nothing follows it: the steps before it had none.
    const rowThen = last ? row : { ...row, status: step.status, errorCode: null, errorMessage: null };
    return [{ update, step, index, row: rowThen, conversation }];
  });
  const serialized = await loadMessages(
    baseUrl,
    tx,
    applied.map(({ row }) => row),
  );
  const written = recordEvents(
    tx,
    applied.map(({ update, step, index, row, conversation }, position) => ({
      tenant: { organizationId: row.organizationId, environment: row.environment },
      type: `message.${step.status}` as const,
      data: { message: serialized[position] as Message, conversation },
      // A following status is recorded in the current trace, as a receipt's job records it.
      traceparent: index === 0 ? update.traceparent : undefined,
    })),
  );
  written.catch(() => {});
  if (onApplied) {
    for (const { step, index, conversation } of applied) {
      onApplied({
        channelType: conversation.channel_type ?? null,
        status: step.status,
        ...(step.status === "failed" && step.error ? { errorCode: step.error.code } : {}),
        following: index > 0,
      });
    }
  }
  return { moved: new Set(rowById.keys()), written };
}

/**
 * An update and the following statuses the state machine takes after it, each checked
 * against the status before it (the update itself is checked by the UPDATE).
 */
function statusSteps(update: MessageStatusUpdate): StatusUpdate[] {
  const steps: StatusUpdate[] = [update];
  let current: MessageStatus = update.status;
  for (const next of update.following ?? []) {
    if (!canMove(current, next.status)) continue;
    steps.push(next);
    current = next.status;
  }
  return steps;
}

/** The updates' steps, the first of every update, then the second of those that have one... */
function stepByStep(updates: readonly MessageStatusUpdate[], stepsOf: Map<string, StatusUpdate[]>) {
  const longest = Math.max(...[...stepsOf.values()].map((steps) => steps.length));
  const ordered: { update: MessageStatusUpdate; step: StatusUpdate; index: number }[] = [];
  for (let index = 0; index < longest; index++) {
    for (const update of updates) {
      const step = stepsOf.get(update.messageId)?.[index];
      if (step) ordered.push({ update, step, index });
    }
  }
  return ordered;
}

const STATUSES = Object.keys(rank) as MessageStatus[];

/** For each status a message may move to, the statuses it may move from (canMove). */
const MOVES_TO = Object.fromEntries(
  STATUSES.map((next) => [next, STATUSES.filter((current) => next !== "queued" && canMove(current, next))]),
) as Record<StatusUpdate["status"], MessageStatus[]>;
