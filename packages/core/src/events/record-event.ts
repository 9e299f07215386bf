import { eventOutbox, events, newId, type Queryable, reusableQuery, type TenantScope } from "@parley/db";
import type { EventDataMap, RecordedEventType } from "@parley/schema";
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
    }),
    insertOutboxRowQuery(tx, { eventId: id }),
  ]);
  return id;
}

/** Several events, each with its outbox row, in two statements sent together (a batch of changes). */
export async function recordEvents<T extends RecordedEventType>(
  tx: Queryable,
  recorded: readonly { tenant: TenantScope; type: T; data: EventDataMap[T] }[],
): Promise<string[]> {
  if (recorded.length === 0) return [];
  const rows = recorded.map((event) => ({
    id: newId("event"),
    organizationId: event.tenant.organizationId,
    environment: event.tenant.environment,
    type: event.type,
    data: event.data as Record<string, unknown>,
  }));
  await Promise.all([
    tx.insert(events).values(rows),
    tx.insert(eventOutbox).values(rows.map((row) => ({ eventId: row.id }))),
  ]);
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
    })
    .prepare("insert_event"),
);
const insertOutboxRowQuery = reusableQuery((db) =>
  db
    .insert(eventOutbox)
    .values({ eventId: sql.placeholder("eventId") })
    .prepare("insert_event_outbox_row"),
);
