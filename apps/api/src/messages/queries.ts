import { deliveryJobSpec, outboxWaiting, relaysWoken } from "@parley/core";
import {
  attachments,
  inTenant,
  inTenantPlaceholders,
  limitUnknownToPlanner,
  messages,
  postgresClientOf,
  type Queryable,
  type RawRows,
  reusableRawQuery,
  type TenantScope,
  valueUnknownToPlanner,
} from "@parley/db";
import type { ChannelStatus, ChannelType } from "@parley/schema";
import { currentTraceparent } from "@parley/tracing";
import { and, desc, eq, getTableColumns, gte, lt, type SQL, type SQLWrapper, sql } from "drizzle-orm";
import { afterPlaceholderPosition, afterPosition, type KeysetPosition } from "../http/pagination.js";

export type MessageRow = typeof messages.$inferSelect;

export interface MessageFilters {
  direction?: "inbound" | "outbound" | undefined;
  createdAfter?: Date | undefined;
  createdBefore?: Date | undefined;
}

/**
 * A page of a conversation's messages, each row whole with its version (see MessageTexts),
 * read in one step from the conversation's index, the page's size unknown to the planner
 * (`limitUnknownToPlanner`): that plan reads the index in order and stops after the page,
 * whatever the statistics. The tenant is checked on the page's rows, outside the read (a
 * conversation's messages are all its tenant's): inside it, the tenant's columns made the
 * planner take a conversation that grew since the last ANALYZE for less than a row, and
 * sort all of it for every page (`list-indexes.test.ts`). The ids from the index first,
 * then the rows by key, as pages were read before, cost PostgreSQL four times the
 * buffers of a page (bench/notebook.md, 2026-11-29).
 */
export function selectMessagePage(db: Queryable, ...conditions: (SQL | undefined)[]) {
  const page = conversationInOrder(db, limitUnknownToPlanner(sql.placeholder("limit")), conditions);
  return db.select().from(page).where(inTenantPlaceholders(page)).orderBy(desc(page.createdAt), desc(page.id));
}

/** More than any conversation holds: the inner read of a page of one direction stops at the outer LIMIT. */
const WHOLE_CONVERSATION = 2_147_483_647;

/**
 * A page of the messages of one direction, as selectMessagePage reads a page: the
 * conversation's messages read from its index in order (their other conditions with them),
 * the direction checked on them as they come, the page's LIMIT outside. Inside, the
 * direction had stale statistics (a conversation taken for a row or two) plan a read of the
 * whole conversation and a sort of it (`list-indexes.test.ts`).
 */
export function selectMessagePageOfDirection(
  db: Queryable,
  direction: MessageRow["direction"] | SQLWrapper,
  ...conditions: (SQL | undefined)[]
) {
  // Hidden as the page's limit is (limitUnknownToPlanner), written in the text: no parameter.
  const inOrder = conversationInOrder(db, limitUnknownToPlanner(sql.raw(String(WHOLE_CONVERSATION))), conditions);
  return db
    .select()
    .from(inOrder)
    .where(and(inTenantPlaceholders(inOrder), eq(inOrder.direction, direction)))
    .orderBy(desc(inOrder.createdAt), desc(inOrder.id))
    .limit(limitUnknownToPlanner(sql.placeholder("limit")));
}

/** The page's conversation, by an id the plan is not made for (valueUnknownToPlanner). */
function inThePagesConversation(): SQL {
  return eq(messages.conversationId, valueUnknownToPlanner(sql.placeholder("conversationId"), "text"));
}

/** A conversation's messages with their rows' versions, newest first, from its index, up to `limit`: a page's inner read. */
function conversationInOrder(db: Queryable, limit: number, conditions: (SQL | undefined)[]) {
  return db
    .select({ ...getTableColumns(messages), rowVersion: rowVersionColumn() })
    .from(messages)
    .where(and(inThePagesConversation(), ...conditions))
    .orderBy(desc(messages.createdAt), desc(messages.id))
    .limit(limit)
    .as("page");
}

/**
 * The same page as selectMessagePage, the same plan, but of each message only what a page
 * whose answers are all kept needs (MessageTexts): its id, its time (the next cursor) and
 * its row's version. A page's whole rows were most of what a page read again allocated,
 * and what the collector then promoted (bench/notebook.md, 2026-11-29, evening).
 */
export function selectMessagePageVersions(db: Queryable, ...conditions: (SQL | undefined)[]) {
  const page = db
    .select({
      id: messages.id,
      createdAt: messages.createdAt,
      organizationId: messages.organizationId,
      environment: messages.environment,
      rowVersion: rowVersionColumn(),
    })
    .from(messages)
    .where(and(inThePagesConversation(), ...conditions))
    .orderBy(desc(messages.createdAt), desc(messages.id))
    .limit(limitUnknownToPlanner(sql.placeholder("limit")))
    .as("page");
  return db
    .select({ id: page.id, createdAt: page.createdAt, rowVersion: page.rowVersion })
    .from(page)
    .where(inTenantPlaceholders(page))
    .orderBy(desc(page.createdAt), desc(page.id));
}

/** The column of a row's version: `xmin`, the transaction that wrote it, which every UPDATE renews. */
const ROW_VERSION = "row_version";

function rowVersionColumn() {
  return sql<string>`xmin::text`.as(ROW_VERSION);
}

/** A message of a page, with the version of its row (see MessageTexts). */
export type PageMessageRow = MessageRow & { rowVersion: string };

// The pages of a conversation without filters, the ones read most: built once, their rows
// mapped here (see reusableRawQuery).
const firstPageQuery = reusableRawQuery<PageValues>((db) => selectMessagePage(db));
const nextPageQuery = reusableRawQuery<PageValues & AfterValues>((db) =>
  selectMessagePage(db, afterPlaceholderPosition(messages)),
);

const firstPageVersionsQuery = reusableRawQuery<PageValues>((db) => selectMessagePageVersions(db));
const nextPageVersionsQuery = reusableRawQuery<PageValues & AfterValues>((db) =>
  selectMessagePageVersions(db, afterPlaceholderPosition(messages)),
);

type PageValues = TenantScope & { conversationId: string; limit: number };
type AfterValues = { afterCreatedAt: string; afterId: string };

type PageQuery<Values> = (db: Queryable, values: Values) => Promise<RawRows>;

/** A page by its first query, or after a cursor by its next one. */
function readPage(
  db: Queryable,
  first: PageQuery<PageValues>,
  next: PageQuery<PageValues & AfterValues>,
  values: PageValues,
  after: KeysetPosition | undefined,
): Promise<RawRows> {
  if (!after) return first(db, values);
  return next(db, { ...values, afterCreatedAt: after.createdAt.toISOString(), afterId: after.id });
}

/** A page's messages: each field's column, the table's own (as drizzle names them) and the row's version. */
const PAGE_MESSAGE_COLUMNS = {
  ...Object.fromEntries(Object.entries(getTableColumns(messages)).map(([field, column]) => [field, column.name])),
  rowVersion: ROW_VERSION,
} as Record<keyof PageMessageRow, string>;

type MessageColumns = Record<keyof PageMessageRow, number>;

/** A message of a page, as much of it as a page whose answers are kept needs (see MessageTexts). */
export interface PageMessageVersion extends KeysetPosition {
  rowVersion: string;
}

const PAGE_VERSION_COLUMNS: Record<keyof PageMessageVersion, string> = {
  id: messages.id.name,
  createdAt: messages.createdAt.name,
  rowVersion: ROW_VERSION,
};

const positionsByStatement = new WeakMap<ReadonlyMap<string, number>, Record<string, number>>();

/**
 * Where each of `columns`' fields is in a statement's raw rows (see reusableRawQuery), by
 * its column's name: worked out once per statement (each is always read for the same fields).
 */
function columnPositions<Field extends string>(
  columnIndex: ReadonlyMap<string, number>,
  columns: Record<Field, string>,
): Record<Field, number> {
  let positions = positionsByStatement.get(columnIndex);
  if (!positions) {
    const entries = Object.entries<string>(columns).map(([field, name]) => {
      const index = columnIndex.get(name);
      if (index === undefined) throw new Error(`a message page's statement has no column ${name}`);
      return [field, index] as const;
    });
    positions = Object.fromEntries(entries);
    positionsByStatement.set(columnIndex, positions);
  }
  return positions as Record<Field, number>;
}

/**
 * A raw row of a page's message as a PageMessageRow: one object shape for every row, its
 * times parsed only when read (a message whose answer is kept never reads them).
 */
class RawPageMessage implements PageMessageRow {
  readonly id: string;
  readonly organizationId: string;
  readonly environment: MessageRow["environment"];
  readonly conversationId: string;
  readonly direction: MessageRow["direction"];
  readonly type: MessageRow["type"];
  readonly text: string | null;
  readonly attachmentId: string | null;
  readonly metadata: MessageRow["metadata"];
  readonly status: MessageRow["status"];
  readonly errorCode: string | null;
  readonly errorMessage: string | null;
  readonly providerMessageId: string | null;
  readonly authentication: MessageRow["authentication"];
  readonly smsSegments: number | null;
  readonly smsEncoding: MessageRow["smsEncoding"];
  readonly rowVersion: string;
  private readonly createdAtText: string;
  private readonly updatedAtText: string;
  private createdAtDate: Date | undefined;
  private updatedAtDate: Date | undefined;

  constructor(raw: unknown[], at: MessageColumns) {
    this.id = raw[at.id] as string;
    this.organizationId = raw[at.organizationId] as string;
    this.environment = raw[at.environment] as MessageRow["environment"];
    this.conversationId = raw[at.conversationId] as string;
    this.direction = raw[at.direction] as MessageRow["direction"];
    this.type = raw[at.type] as MessageRow["type"];
    this.text = raw[at.text] as string | null;
    this.attachmentId = raw[at.attachmentId] as string | null;
    this.metadata = raw[at.metadata] as MessageRow["metadata"];
    this.status = raw[at.status] as MessageRow["status"];
    this.errorCode = raw[at.errorCode] as string | null;
    this.errorMessage = raw[at.errorMessage] as string | null;
    this.providerMessageId = raw[at.providerMessageId] as string | null;
    this.authentication = raw[at.authentication] as MessageRow["authentication"];
    this.smsSegments = raw[at.smsSegments] as number | null;
    this.smsEncoding = raw[at.smsEncoding] as MessageRow["smsEncoding"];
    this.rowVersion = raw[at.rowVersion] as string;
    this.createdAtText = raw[at.createdAt] as string;
    this.updatedAtText = raw[at.updatedAt] as string;
    this.createdAtDate = undefined;
    this.updatedAtDate = undefined;
  }

  get createdAt(): Date {
    this.createdAtDate ??= new Date(this.createdAtText);
    return this.createdAtDate;
  }

  get updatedAt(): Date {
    this.updatedAtDate ??= new Date(this.updatedAtText);
    return this.updatedAtDate;
  }
}

export function hasFilters(filters: MessageFilters): boolean {
  return Boolean(filters.direction || filters.createdAfter || filters.createdBefore);
}

/** `limit + 1` messages of a page, each with its row's version: the extra one only tells that there is more. */
export async function listConversationMessages(
  db: Queryable,
  tenant: TenantScope,
  conversationId: string,
  filters: MessageFilters,
  limit: number,
  after?: KeysetPosition,
): Promise<PageMessageRow[]> {
  const values = { ...tenant, conversationId, limit: limit + 1 };
  if (!hasFilters(filters)) {
    const { rows, columnIndex } = await readPage(db, firstPageQuery, nextPageQuery, values, after);
    const at: MessageColumns = columnPositions(columnIndex, PAGE_MESSAGE_COLUMNS);
    return rows.map((raw) => new RawPageMessage(raw, at));
  }
  const conditions = [
    afterPosition(messages, after),
    filters.createdAfter ? gte(messages.createdAt, filters.createdAfter) : undefined,
    filters.createdBefore ? lt(messages.createdAt, filters.createdBefore) : undefined,
  ];
  const page = filters.direction
    ? selectMessagePageOfDirection(db, filters.direction, ...conditions)
    : selectMessagePage(db, ...conditions);
  return page.execute(values);
}

/** `limit + 1` messages of an unfiltered page, each its id, time and row's version only. */
export async function listConversationMessageVersions(
  db: Queryable,
  tenant: TenantScope,
  conversationId: string,
  limit: number,
  after?: KeysetPosition,
): Promise<PageMessageVersion[]> {
  const values = { ...tenant, conversationId, limit: limit + 1 };
  const { rows, columnIndex } = await readPage(db, firstPageVersionsQuery, nextPageVersionsQuery, values, after);
  const at = columnPositions(columnIndex, PAGE_VERSION_COLUMNS);
  return rows.map((raw) => ({
    id: raw[at.id] as string,
    createdAt: new Date(raw[at.createdAt] as string),
    rowVersion: raw[at.rowVersion] as string,
  }));
}

export async function findMessage(db: Queryable, tenant: TenantScope, id: string) {
  const [row] = await db
    .select()
    .from(messages)
    .where(and(inTenant(messages, tenant), eq(messages.id, id)));
  return row;
}

/** What a send needs of its conversation: where it goes, and whether that channel is connected. */
export interface SendTarget {
  conversationId: string;
  /** Null on a manual record: stored, never delivered. */
  channelId: string | null;
  channelType: ChannelType | null;
  channelStatus: ChannelStatus | null;
  /** `sandbox`, or the live provider (`meta`, `smtp`, `twilio`...); null on a manual record. */
  channelProvider: string | null;
  /** The channel's plain settings: what narrows its capabilities (an SMS number's MMS). */
  channelSettings: Record<string, unknown> | null;
  /** SMS: the number the contact wrote from (E.164), where replies go; null when they have not written. */
  recipient: string | null;
  /** SMS, when the contact has not written: the phone on the contact, as typed. */
  contactPhone: string | null;
}

/**
 * The conversation a send goes to, held (`for key share`) until the message is stored: a
 * concurrent deletion of the conversation (with its contact) waits or wins cleanly. A few
 * columns by a postgres.js statement: every send reads it, and drizzle's whole-row mapping
 * of a conversation and its channel cost more than the statement. The contact's phone is
 * read only for an SMS conversation its contact has not written in (a subquery PostgreSQL
 * runs only then).
 */
export async function findSendTarget(
  db: Queryable,
  tenant: TenantScope,
  conversationId: string,
): Promise<SendTarget | undefined> {
  const [row] = await postgresClientOf(db)<
    {
      id: string;
      channel_id: string | null;
      type: ChannelType | null;
      status: ChannelStatus | null;
      provider: string | null;
      settings: Record<string, unknown> | null;
      recipient: string | null;
      contact_phone: string | null;
    }[]
  >`
    select c.id, c.channel_id, ch.type, ch.status, ch.provider, ch.settings, c.recipient,
           case when ch.type = 'sms' and c.recipient is null
                then (select ct.phone from contacts ct where ct.id = c.contact_id) end as contact_phone
    from conversations c left join channels ch on ch.id = c.channel_id
    where c.organization_id = ${tenant.organizationId} and c.environment = ${tenant.environment}
      and c.id = ${conversationId}
    for key share of c`;
  if (!row) return undefined;
  return {
    conversationId: row.id,
    channelId: row.channel_id,
    channelType: row.type,
    channelStatus: row.status,
    channelProvider: row.provider,
    channelSettings: row.settings,
    recipient: row.recipient,
    contactPhone: row.contact_phone,
  };
}

/**
 * A send's message and, when it goes out on a channel, its delivery outbox row: one
 * statement (the outbox row's reference to the message is checked at commit, migration
 * 0011). Every column is given, so the answer is built without reading the row back. With
 * tracing on the outbox row carries the request's `traceparent`, so the delivery job
 * continues its trace. Timestamps and JSON go as text: the client's parsers are drizzle's
 * (see reusableRawQuery).
 *
 * With `relayNow` (a quiet API process, see RequestRelay) the statement adds the message's
 * delivery job itself instead of its outbox row, saving the relay's hop; unless the outbox
 * holds rows this transaction can see, sends before this one that the relay delivers
 * first: then its outbox row, and a wake-up of the relays at commit (`relaysWoken`).
 */
export async function insertSentMessage(db: Queryable, row: MessageRow, deliver: boolean, relayNow = false) {
  const client = postgresClientOf(db);
  const traceparent = currentTraceparent() ?? null;
  const message = client`
    message as (
      insert into messages (id, organization_id, environment, conversation_id, direction, type, text,
                            attachment_id, metadata, status, sms_segments, sms_encoding, created_at, updated_at)
      values (${row.id}, ${row.organizationId}, ${row.environment}, ${row.conversationId}, ${row.direction},
              ${row.type}, ${row.text}, ${row.attachmentId}, ${JSON.stringify(row.metadata)}::jsonb, ${row.status},
              ${row.smsSegments}, ${row.smsEncoding},
              ${row.createdAt.toISOString()}::timestamptz, ${row.updatedAt.toISOString()}::timestamptz)
      returning id
    )`;
  if (!(deliver && relayNow)) {
    await client`
      with ${message}
      insert into message_outbox (message_id, traceparent)
      select id, ${traceparent} from message where ${deliver}::boolean`;
    return;
  }
  await client`
    with ${message},
    ${outboxWaiting(client, "message_outbox")},
    outboxed as (
      insert into message_outbox (message_id, traceparent)
      select id, ${traceparent} from message where (select outboxed from waiting)
    ),
    message_jobs as (
      select graphile_worker.add_jobs(array[${deliveryJobSpec(client, client`array[id]`, client`case when ${traceparent}::text is not null then array[${traceparent}::text] end`)}])
      from message where not (select outboxed from waiting)
    ),
    ${relaysWoken(client)}
    select (select count(*) from message_jobs)::int as delivery_jobs,
           (select count(*) from relays_woken)::int as relays_woken`;
}

export async function retainAttachment(db: Queryable, tenant: TenantScope, attachmentId: string) {
  await db
    .update(attachments)
    .set({ retained: true })
    .where(and(inTenant(attachments, tenant), eq(attachments.id, attachmentId)));
}
