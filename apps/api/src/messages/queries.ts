import {
  attachments,
  inTenant,
  inTenantPlaceholders,
  messageOutbox,
  messages,
  type Queryable,
  reusableQuery,
  reusableRawQuery,
  type TenantScope,
} from "@parley/db";
import { currentTraceparent } from "@parley/tracing";
import { and, desc, eq, gte, lt, type SQL, sql } from "drizzle-orm";
import { afterPlaceholderPosition, afterPosition, type KeysetPosition } from "../http/pagination.js";

export type MessageRow = typeof messages.$inferSelect;

export interface MessageFilters {
  direction?: "inbound" | "outbound" | undefined;
  createdAfter?: Date | undefined;
  createdBefore?: Date | undefined;
}

/**
 * A page of a conversation: its ids from the conversation's index alone (an index-only
 * scan that stops after the page), then those rows by key, ordered again. Read in one
 * step, the planner sorted the whole conversation for every page whenever the statistics
 * did not know how busy it was (a conversation that grew since the last ANALYZE): the
 * ids alone, from the index that holds them in order, are always the cheaper plan. A
 * conversation's messages are all its tenant's, so the tenant is checked on the rows.
 */
export function selectMessagePage(db: Queryable, ...conditions: (SQL | undefined)[]) {
  const pageIds = db
    .select({ id: messages.id })
    .from(messages)
    .where(and(eq(messages.conversationId, sql.placeholder("conversationId")), ...conditions))
    .orderBy(desc(messages.createdAt), desc(messages.id))
    .limit(sql.placeholder("limit"));
  // By key (`= any(array(...))`): `in (subquery)` let a generic plan, not knowing the
  // limit, hash the page's ids against every message of the table.
  return db
    .select()
    .from(messages)
    .where(and(inTenantPlaceholders(messages), sql`${messages.id} = any(array(${pageIds}))`))
    .orderBy(desc(messages.createdAt), desc(messages.id));
}

// The pages of a conversation without filters, the ones read most: built once, their rows
// mapped here (see reusableRawQuery).
const firstPageQuery = reusableRawQuery<PageValues, RawMessageRow>((db) => selectMessagePage(db));
const nextPageQuery = reusableRawQuery<PageValues & AfterValues, RawMessageRow>((db) =>
  selectMessagePage(db, afterPlaceholderPosition(messages)),
);

type PageValues = TenantScope & { conversationId: string; limit: number };
type AfterValues = { afterCreatedAt: string; afterId: string };

/** A row of `messages` as PostgreSQL answers it (see reusableRawQuery). */
interface RawMessageRow {
  id: string;
  organization_id: string;
  environment: MessageRow["environment"];
  conversation_id: string;
  direction: MessageRow["direction"];
  type: MessageRow["type"];
  text: string | null;
  attachment_id: string | null;
  metadata: MessageRow["metadata"];
  status: MessageRow["status"];
  error_code: string | null;
  error_message: string | null;
  provider_message_id: string | null;
  authentication: MessageRow["authentication"];
  created_at: string;
  updated_at: string;
}

function messageRowOf(raw: RawMessageRow): MessageRow {
  return {
    id: raw.id,
    organizationId: raw.organization_id,
    environment: raw.environment,
    conversationId: raw.conversation_id,
    direction: raw.direction,
    type: raw.type,
    text: raw.text,
    attachmentId: raw.attachment_id,
    metadata: raw.metadata,
    status: raw.status,
    errorCode: raw.error_code,
    errorMessage: raw.error_message,
    providerMessageId: raw.provider_message_id,
    authentication: raw.authentication,
    createdAt: new Date(raw.created_at),
    updatedAt: new Date(raw.updated_at),
  };
}

function hasFilters(filters: MessageFilters): boolean {
  return Boolean(filters.direction || filters.createdAfter || filters.createdBefore);
}

/** `limit + 1` rows: the extra one only tells that there is more. */
export async function listConversationMessages(
  db: Queryable,
  tenant: TenantScope,
  conversationId: string,
  filters: MessageFilters,
  limit: number,
  after?: KeysetPosition,
) {
  const values = { ...tenant, conversationId, limit: limit + 1 };
  if (!hasFilters(filters)) {
    const rows = after
      ? await nextPageQuery(db, { ...values, afterCreatedAt: after.createdAt.toISOString(), afterId: after.id })
      : await firstPageQuery(db, values);
    return rows.map(messageRowOf);
  }
  return selectMessagePage(
    db,
    afterPosition(messages, after),
    filters.direction ? eq(messages.direction, filters.direction) : undefined,
    filters.createdAfter ? gte(messages.createdAt, filters.createdAfter) : undefined,
    filters.createdBefore ? lt(messages.createdAt, filters.createdBefore) : undefined,
  ).execute(values);
}

export async function findMessage(db: Queryable, tenant: TenantScope, id: string) {
  const [row] = await db
    .select()
    .from(messages)
    .where(and(inTenant(messages, tenant), eq(messages.id, id)));
  return row;
}

// The statements of every send, built once (see reusableQuery).
const insertSentMessageQuery = reusableQuery((db) =>
  db
    .insert(messages)
    .values({
      id: sql.placeholder("id"),
      organizationId: sql.placeholder("organizationId"),
      environment: sql.placeholder("environment"),
      conversationId: sql.placeholder("conversationId"),
      direction: sql.placeholder("direction"),
      type: sql.placeholder("type"),
      text: sql.placeholder("text"),
      attachmentId: sql.placeholder("attachmentId"),
      metadata: sql.placeholder("metadata"),
      status: sql.placeholder("status"),
      createdAt: sql.placeholder("createdAt"),
      updatedAt: sql.placeholder("updatedAt"),
    })
    .prepare("insert_sent_message"),
);
const enqueueDeliveryQuery = reusableQuery((db) =>
  db
    .insert(messageOutbox)
    .values({ messageId: sql.placeholder("messageId"), traceparent: sql.placeholder("traceparent") })
    .prepare("enqueue_delivery"),
);

/** A send's message, every column given: the answer is built without reading it back. */
export async function insertMessage(db: Queryable, row: MessageRow) {
  await insertSentMessageQuery(db, row);
}

/**
 * The delivery outbox row, in the send's own transaction: a delivery cannot be lost. With
 * tracing on it carries the request's `traceparent`, so the delivery job continues its trace.
 */
export async function enqueueDelivery(db: Queryable, messageId: string) {
  await enqueueDeliveryQuery(db, { messageId, traceparent: currentTraceparent() });
}

export async function retainAttachment(db: Queryable, tenant: TenantScope, attachmentId: string) {
  await db
    .update(attachments)
    .set({ retained: true })
    .where(and(inTenant(attachments, tenant), eq(attachments.id, attachmentId)));
}
