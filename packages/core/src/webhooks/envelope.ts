import type { events } from "@parley/db";
import type { Event } from "@parley/schema";
import { apiTimestamp } from "../serialize/timestamp.js";

export type EventRow = typeof events.$inferSelect;

/** The event as GET /events returns it; `data` was written for its `type` (recordEvent). */
export function serializeEvent(row: EventRow): Event {
  return {
    object: "event",
    id: row.id,
    type: row.type,
    created_at: apiTimestamp(row.createdAt),
    environment: row.environment,
    organization_id: row.organizationId,
    data: row.data,
  } as Event;
}

/** The body every attempt of an event sends, identical each time: the spec's envelope. */
export function envelopeBody(row: EventRow): string {
  return JSON.stringify({
    id: row.id,
    type: row.type,
    created_at: apiTimestamp(row.createdAt),
    environment: row.environment,
    organization_id: row.organizationId,
    data: row.data,
  });
}
