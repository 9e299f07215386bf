import { sql } from "drizzle-orm";
import { index, integer, jsonb, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { createdAt, environmentEnum, tenantColumns, timestampMs } from "./columns.js";

/** The outbox: every state change with an event type records its event in the same transaction. */
export const events = pgTable(
  "events",
  {
    id: text("id").primaryKey(),
    ...tenantColumns(),
    type: text("type").notNull(),
    data: jsonb("data").$type<Record<string, unknown>>().notNull(),
    /** The W3C `traceparent` of the span that recorded the event (tracing on): its webhook attempts continue that trace. */
    traceparent: text("traceparent"),
    /**
     * When the row was written, not when its transaction began (`now()`): a transaction that
     * waited on a lock records its events after those of the one that held it, in the order
     * the changes happened (a conversation reopened before the messages that queued behind it).
     */
    createdAt: timestampMs("created_at").notNull().default(sql`clock_timestamp()`),
  },
  (t) => [
    index("events_list_idx").on(
      t.organizationId,
      t.environment,
      t.createdAt.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
  ],
);

export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    organizationId: text("organization_id").notNull(),
    key: text("key").notNull(),
    environment: environmentEnum("environment").notNull(),
    /** Hash of method, path, environment and body: a replay must match it exactly. */
    fingerprint: text("fingerprint").notNull(),
    responseStatus: integer("response_status"),
    responseBody: jsonb("response_body"),
    createdAt: createdAt(),
    /** Null while the first request is still running. */
    completedAt: timestampMs("completed_at"),
  },
  // A key is the client's per environment, as Stripe's are per mode: test and live never collide.
  (t) => [
    primaryKey({ columns: [t.organizationId, t.environment, t.key] }),
    index("idempotency_keys_created_idx").on(t.createdAt),
  ],
);

/** Fixed one-minute windows, shared by every API process; UNLOGGED (migration 0006) for speed. */
export const rateLimitWindows = pgTable(
  "rate_limit_windows",
  {
    organizationId: text("organization_id").notNull(),
    windowStart: timestampMs("window_start").notNull(),
    count: integer("count").notNull(),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.windowStart] })],
);

/** Secrets of the installation itself (cursor signing), the same for every process. */
export const instanceSecrets = pgTable("instance_secrets", {
  name: text("name").primaryKey(),
  value: text("value").notNull(),
  createdAt: createdAt(),
});

/**
 * Liveness of the job queue's workers: a worker whose heartbeat stops (a crashed
 * process) has its locked jobs released for another worker to pick up.
 */
export const workerHeartbeats = pgTable("worker_heartbeats", {
  workerId: text("worker_id").primaryKey(),
  lastSeenAt: timestampMs("last_seen_at").notNull(),
});
