import { eventOutbox, events, newId, type Queryable, type TenantScope } from "@parley/db";
import type { EventDataMap, RecordedEventType } from "@parley/schema";

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
  await tx.insert(events).values({
    id,
    organizationId: tenant.organizationId,
    environment: tenant.environment,
    type,
    data: data as Record<string, unknown>,
  });
  await tx.insert(eventOutbox).values({ eventId: id });
  return id;
}
