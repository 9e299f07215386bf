import { bigserial, boolean, index, integer, pgTable, text } from "drizzle-orm/pg-core";
import { createdAt, tenantColumns, timestampMs, updatedAt } from "./columns.js";

export const webhookEndpoints = pgTable(
  "webhook_endpoints",
  {
    id: text("id").primaryKey(),
    ...tenantColumns(),
    url: text("url").notNull(),
    description: text("description"),
    /** Event types, or `*` for all. */
    events: text("events").array().notNull(),
    enabled: boolean("enabled").notNull().default(true),
    disabledReason: text("disabled_reason"),
    /** The signing key itself: it must sign every delivery, so it is kept, never shown again. */
    secret: text("secret").notNull(),
    /** During a rotation the old secret keeps signing until it expires. */
    previousSecret: text("previous_secret"),
    previousSecretExpiresAt: timestampMs("previous_secret_expires_at"),
    /** Consecutive events whose delivery failed, since `first_failure_at`; cleared by success or re-enabling. */
    failureCount: integer("failure_count").notNull().default(0),
    firstFailureAt: timestampMs("first_failure_at"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("webhook_endpoints_list_idx").on(
      t.organizationId,
      t.environment,
      t.createdAt.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
  ],
);

/** One row per delivery attempt; the attempts of one event share `event_id`. */
export const webhookDeliveries = pgTable(
  "webhook_deliveries",
  {
    id: text("id").primaryKey(),
    ...tenantColumns(),
    endpointId: text("endpoint_id")
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: "cascade" }),
    eventId: text("event_id").notNull(),
    eventType: text("event_type").notNull(),
    attempt: integer("attempt").notNull(),
    succeeded: boolean("succeeded").notNull(),
    responseStatus: integer("response_status"),
    durationMs: integer("duration_ms").notNull(),
    responseExcerpt: text("response_excerpt"),
    error: text("error"),
    nextRetryAt: timestampMs("next_retry_at"),
    createdAt: createdAt(),
  },
  (t) => [
    index("webhook_deliveries_list_idx").on(t.endpointId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    index("webhook_deliveries_event_idx").on(t.eventId, t.endpointId),
  ],
);

/**
 * Events waiting to be fanned out to webhook endpoints, written with the event itself.
 * A relay turns each row into one delivery job per subscribed endpoint and deletes it in
 * the same transaction.
 */
export const eventOutbox = pgTable(
  "event_outbox",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    eventId: text("event_id").notNull(),
    createdAt: createdAt(),
  },
  (t) => [index("event_outbox_event_idx").on(t.eventId)],
);
