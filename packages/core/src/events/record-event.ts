import {
  eventOutbox,
  events,
  newId,
  postgresClientOf,
  type Queryable,
  reusableQuery,
  type TenantScope,
} from "@parley/db";
import type { EventDataMap, RecordedEventType } from "@parley/schema";
import { currentTraceparent } from "@parley/tracing";
import { sql } from "drizzle-orm";

/**
 * Records an event, and its row in the webhook outbox. Call it inside the transaction of
 * the change that causes it: the event, and its delivery to every subscribed endpoint,
 * exist exactly when the change does.
 */
export async function recordEvent<T extends RecordedEventType>(
  tx: Queryable,
  tenant: TenantScope,
  type: T,
  data: EventDataMap[T],
): Promise<string> {
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

/**
 * Several events, each with its outbox row, in one statement (a batch of changes): the
 * rows travel as one JSON array, so the statement is the same text whatever their number
 * (drizzle built a parameter, and SQL, for every value of every row). The outbox rows
 * follow the events' order.
 */
export async function recordEvents<T extends RecordedEventType>(
  tx: Queryable,
  recorded: readonly { tenant: TenantScope; type: T; data: EventDataMap[T]; traceparent?: string | undefined }[],
): Promise<string[]> {
  if (recorded.length === 0) return [];
  // Tracing on: the webhook attempts of these events continue the trace that caused them
  // (an event's own, where a batch holds the work of several traces).
  const current = currentTraceparent();
  const rows = recorded.map((event) => ({
    id: newId("event"),
    organization_id: event.tenant.organizationId,
    environment: event.tenant.environment,
    type: event.type,
    data: event.data,
    traceparent: event.traceparent ?? current,
  }));
  await postgresClientOf(tx)`
    with recorded as (
      insert into events (id, organization_id, environment, type, data, traceparent)
      select row->>'id', row->>'organization_id', (row->>'environment')::environment, row->>'type', row->'data',
             row->>'traceparent'
      from jsonb_array_elements(${JSON.stringify(rows)}::jsonb) with ordinality as r(row, position)
      order by position
      returning id
    )
    insert into event_outbox (event_id)
    select recorded.id from recorded
    join jsonb_array_elements_text(${JSON.stringify(rows.map((row) => row.id))}::jsonb) with ordinality as o(id, position)
      on o.id = recorded.id
    order by o.position`;
  return rows.map((row) => row.id);
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
