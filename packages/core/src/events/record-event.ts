import { eventOutbox, events, newId, type Queryable, reusableQuery, type TenantScope } from "@parley/db";
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
