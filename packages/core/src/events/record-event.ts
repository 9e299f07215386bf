import {
  eventOutbox,
  events,
  newId,
  postgresClientOf,
  type Queryable,
  reusableQuery,
  type SqlClient,
  type SqlFragment,
  type TenantScope,
} from "@parley/db";
import type { EventDataMap, RecordedEventType } from "@parley/schema";
import { currentTraceparent } from "@parley/tracing";
import { sql } from "drizzle-orm";
import { subscribedEndpoints, webhookJobs } from "../outbox/event-relay.js";
import { outboxWaiting, relaysWoken } from "../outbox/relay-both.js";

/**
 * How a change's events reach the webhook job queue. By default each gets a row in the
 * outbox, which a worker's relay turns into jobs, many events at a time. With `relayNow`
 * (a quiet API process's request, see RequestRelay) the statement adds their jobs itself,
 * which saves the relay's hop; unless the outbox holds rows this transaction can see:
 * those were recorded earlier, and the relay keeps their order.
 */
export interface RecordOptions {
  relayNow?: boolean | undefined;
}

/**
 * Records an event, and its row in the webhook outbox (or its jobs, see RecordOptions).
 * Call it inside the transaction of the change that causes it: the event, and its
 * delivery to every subscribed endpoint, exist exactly when the change does.
 */
export async function recordEvent<T extends RecordedEventType>(
  tx: Queryable,
  tenant: TenantScope,
  type: T,
  data: EventDataMap[T],
  options: RecordOptions = {},
): Promise<string> {
  if (options.relayNow) {
    const [id] = await recordEvents(tx, [{ tenant, type, data }], options);
    return id as string;
  }
  const id = newId("event");
  // Independent rows (the outbox row has no reference to check): one round trip.
  await Promise.all([
    insertEventQuery(tx, {
      id,
      organizationId: tenant.organizationId,
      environment: tenant.environment,
      type,
      data: data as Record<string, unknown>,
      // Tracing on: the webhook attempts of this event continue the trace that caused it.
      traceparent: currentTraceparent(),
    }),
    insertOutboxRowQuery(tx, { eventId: id }),
  ]);
  return id;
}

/** An event to record: what happened, to which tenant; `traceparent` when it is not the current trace's. */
export interface EventToRecord<T extends RecordedEventType = RecordedEventType> {
  tenant: TenantScope;
  type: T;
  data: EventDataMap[T];
  traceparent?: string | undefined;
}

/** An event as the recording statement takes it, with its new id. */
export interface NewEventRow {
  id: string;
  organization_id: string;
  environment: string;
  type: string;
  data: unknown;
  traceparent: string | null;
}

/** The rows of `recorded`, each with a new id, in order. */
export function eventRows(recorded: readonly EventToRecord[]): NewEventRow[] {
  // Tracing on: the webhook attempts of these events continue the trace that caused them
  // (an event's own, where a batch holds the work of several traces).
  const current = currentTraceparent();
  return recorded.map((event) => ({
    id: newId("event"),
    organization_id: event.tenant.organizationId,
    environment: event.tenant.environment,
    type: event.type,
    data: event.data,
    traceparent: event.traceparent ?? current,
  }));
}

/**
 * Several events, each with its outbox row (or their jobs, see RecordOptions), in one
 * statement (a batch of changes): the rows travel as one JSON array, so the statement is
 * the same text whatever their number (drizzle built a parameter, and SQL, for every value
 * of every row). The outbox rows follow the events' order.
 */
export async function recordEvents<T extends RecordedEventType>(
  tx: Queryable,
  recorded: readonly EventToRecord<T>[],
  options: RecordOptions = {},
): Promise<string[]> {
  if (recorded.length === 0) return [];
  const rows = eventRows(recorded);
  const client = postgresClientOf(tx);
  await client`with ${eventRecording(client, rows, options)} select ${eventsRecorded(client)}`;
  return rows.map((row) => row.id);
}

/**
 * What a statement that records events must select: the webhook jobs a `relayNow`
 * recording added, and its wake-up of the relays (a CTE that is not read is not run).
 */
export function eventsRecorded(client: SqlClient) {
  return client`(select count(*) from event_jobs)::int as webhook_jobs, (select count(*) from relays_woken)::int as relays_woken`;
}

/**
 * The common table expressions that record `rows` inside a statement of the caller's
 * (see recordEvents, which is one): `recorded`, the events, then their outbox rows, or with
 * `relayNow` their jobs (`event_jobs`), unless the outbox holds a row the transaction can
 * see: then their outbox rows, and a wake-up of the relays at commit (`relaysWoken`), as
 * the write that asked for `relayNow` wakes none after it. `when`: SQL the events are
 * recorded only if it holds (another CTE's row, say).
 * The statement must select `eventsRecorded`.
 */
export function eventRecording(
  client: SqlClient,
  rows: readonly NewEventRow[],
  options: RecordOptions = {},
  when: SqlFragment = client`true`,
) {
  const ids = JSON.stringify(rows.map((row) => row.id));
  const recorded = client`
    recorded as (
      insert into events (id, organization_id, environment, type, data, traceparent)
      select row->>'id', row->>'organization_id', (row->>'environment')::environment, row->>'type', row->'data',
             row->>'traceparent'
      from jsonb_array_elements(${JSON.stringify(rows)}::jsonb) with ordinality as r(row, position)
      where ${when}
      order by position
      returning id, organization_id, environment, type
    )`;
  const outboxRows = client`
    select recorded.id from recorded
    join jsonb_array_elements_text(${ids}::jsonb) with ordinality as o(id, position) on o.id = recorded.id`;
  if (!options.relayNow) {
    return client`
      ${recorded},
      outboxed as (insert into event_outbox (event_id) ${outboxRows} order by o.position),
      event_jobs as (select where false),
      relays_woken as (select where false)`;
  }
  return client`
    ${recorded},
    ${outboxWaiting(client, "event_outbox")},
    outboxed as (
      insert into event_outbox (event_id) ${outboxRows} where (select outboxed from waiting) order by o.position
    ),
    event_pairs as (
      select r.id as event_id, w.id as endpoint_id
      from recorded r
      cross join lateral (${subscribedEndpoints(client, client`r`)}) as w
      where not (select outboxed from waiting)
    ),
    ${webhookJobs(client)},
    ${relaysWoken(client)}`;
}

// Every change with an event runs these: built once (see reusableQuery).
const insertEventQuery = reusableQuery((db) =>
  db
    .insert(events)
    .values({
      id: sql.placeholder("id"),
      organizationId: sql.placeholder("organizationId"),
      environment: sql.placeholder("environment"),
      type: sql.placeholder("type"),
      data: sql.placeholder("data"),
      traceparent: sql.placeholder("traceparent"),
    })
    .prepare("insert_event"),
);
const insertOutboxRowQuery = reusableQuery((db) =>
  db
    .insert(eventOutbox)
    .values({ eventId: sql.placeholder("eventId") })
    .prepare("insert_event_outbox_row"),
);
