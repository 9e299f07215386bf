import { events, newId, type Queryable, reusableQuery, webhookDeliveries, webhookEndpoints } from "@parley/db";
import type { WebhookDelivery } from "@parley/schema";
import { and, eq, sql } from "drizzle-orm";
import { type EventRow, envelopeBody } from "./envelope.js";
import {
  DISABLE_AFTER_FAILED_EVENTS,
  DISABLE_AFTER_MS,
  MAX_WEBHOOK_JOB_ATTEMPTS,
  nextRetryDelayMs,
} from "./schedule.js";
import type { WebhookRequest, WebhookSender } from "./send.js";
import { signatureHeader } from "./sign.js";

export type WebhookEndpointRow = typeof webhookEndpoints.$inferSelect;
export type WebhookDeliveryRow = typeof webhookDeliveries.$inferSelect;

export interface AttemptRequest {
  endpointId: string;
  eventId: string;
  attempt: number;
  /** Automatic attempts follow the retry schedule; manual ones (test, retry by hand) do not. */
  automatic: boolean;
  fastRetry: boolean;
}

/** The secrets that sign now: the current one, and during a rotation the previous one. */
export function signingSecrets(endpoint: WebhookEndpointRow, now = new Date()): string[] {
  const previousValid =
    endpoint.previousSecret && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > now;
  return previousValid && endpoint.previousSecret ? [endpoint.secret, endpoint.previousSecret] : [endpoint.secret];
}

export function serializeDelivery(row: WebhookDeliveryRow): WebhookDelivery {
  return {
    object: "webhook_delivery",
    id: row.id,
    endpoint_id: row.endpointId,
    event_id: row.eventId,
    event_type: row.eventType,
    attempt: row.attempt,
    status: row.succeeded ? "succeeded" : "failed",
    response_status: row.responseStatus,
    duration_ms: row.durationMs,
    response_body: row.responseExcerpt,
    error: row.error,
    next_retry_at: row.nextRetryAt?.toISOString() ?? null,
    created_at: row.createdAt.toISOString(),
  };
}

/** The POST of one event to one endpoint: the envelope, signed now, with the four X-Parley headers. */
export function signedWebhook(endpoint: WebhookEndpointRow, event: EventRow, deliveryId: string): WebhookRequest {
  const timestamp = Math.floor(Date.now() / 1000);
  const body = envelopeBody(event);
  return {
    url: endpoint.url,
    body,
    headers: {
      "content-type": "application/json",
      "user-agent": "Parley-Webhooks/1.0",
      "x-parley-signature": signatureHeader(signingSecrets(endpoint), timestamp, body),
      "x-parley-event": event.type,
      "x-parley-delivery": deliveryId,
      "x-parley-timestamp": String(timestamp),
    },
  };
}

/**
 * One delivery attempt of one event to one endpoint: POST the signed envelope, record
 * the attempt, keep the endpoint's failure streak, and (automatic attempts) add the next
 * attempt of the schedule in the same transaction as the record. Undefined when there is
 * nothing to send (the endpoint was deleted or disabled meanwhile).
 */
export async function attemptWebhook(
  db: { transaction<T>(run: (tx: Queryable) => Promise<T>): Promise<T> } & Queryable,
  sender: WebhookSender,
  request: AttemptRequest,
): Promise<WebhookDeliveryRow | undefined> {
  const [[endpoint], [event]] = await Promise.all([
    findEndpointQuery(db, { id: request.endpointId }),
    findEventQuery(db, { id: request.eventId }),
  ]);
  if (!endpoint || !event || (request.automatic && !endpoint.enabled)) return undefined;
  if (event.organizationId !== endpoint.organizationId || event.environment !== endpoint.environment) return undefined;

  const deliveryId = newId("webhookDelivery");
  const response = await sender.send(signedWebhook(endpoint, event, deliveryId));
  const delay = request.automatic && !response.succeeded ? nextRetryDelayMs(request.attempt, request.fastRetry) : null;
  const now = new Date();
  // The record, the streak and the next attempt are independent: one round trip.
  return db.transaction(async (tx) => {
    const [[row]] = await Promise.all([
      insertDeliveryQuery(tx, {
        id: deliveryId,
        organizationId: endpoint.organizationId,
        environment: endpoint.environment,
        endpointId: endpoint.id,
        eventId: event.id,
        eventType: event.type,
        attempt: request.attempt,
        succeeded: response.succeeded,
        responseStatus: response.status,
        durationMs: response.durationMs,
        responseExcerpt: response.excerpt,
        error: response.error,
        nextRetryAt: delay === null ? null : new Date(now.getTime() + delay).toISOString(),
        createdAt: now,
      }),
      keepFailureStreak(tx, endpoint.id, response.succeeded, request.automatic && request.attempt === 1, now),
      delay === null ? undefined : scheduleNextAttempt(tx, endpoint.id, event.id, request.attempt + 1, delay),
    ]);
    return row;
  });
}

// Every automatic delivery runs these: built once (see reusableQuery).
const findEndpointQuery = reusableQuery((db) =>
  db
    .select()
    .from(webhookEndpoints)
    .where(eq(webhookEndpoints.id, sql.placeholder("id")))
    .prepare("find_webhook_endpoint"),
);
const findEventQuery = reusableQuery((db) =>
  db
    .select()
    .from(events)
    .where(eq(events.id, sql.placeholder("id")))
    .prepare("find_event"),
);
const insertDeliveryQuery = reusableQuery((db) =>
  db
    .insert(webhookDeliveries)
    .values({
      id: sql.placeholder("id"),
      organizationId: sql.placeholder("organizationId"),
      environment: sql.placeholder("environment"),
      endpointId: sql.placeholder("endpointId"),
      eventId: sql.placeholder("eventId"),
      eventType: sql.placeholder("eventType"),
      attempt: sql.placeholder("attempt"),
      succeeded: sql.placeholder("succeeded"),
      responseStatus: sql.placeholder("responseStatus"),
      durationMs: sql.placeholder("durationMs"),
      responseExcerpt: sql.placeholder("responseExcerpt"),
      error: sql.placeholder("error"),
      // Raw: drizzle's timestamp encoder fails on a null placeholder value; an ISO string or null.
      nextRetryAt: sql`${sql.placeholder("nextRetryAt")}::timestamptz`,
      createdAt: sql.placeholder("createdAt"),
    })
    .returning()
    .prepare("insert_webhook_delivery"),
);
const clearStreakQuery = reusableQuery((db) =>
  db
    .update(webhookEndpoints)
    .set({ failureCount: 0, firstFailureAt: null })
    .where(and(eq(webhookEndpoints.id, sql.placeholder("id")), sql`${webhookEndpoints.failureCount} > 0`))
    .prepare("clear_webhook_failure_streak"),
);

/** The next attempt of the schedule, flagged with its endpoint as every deliver_webhook job (the worker's per-endpoint cap). */
async function scheduleNextAttempt(tx: Queryable, endpointId: string, eventId: string, attempt: number, delay: number) {
  const payload = JSON.stringify({ event_id: eventId, endpoint_id: endpointId, attempt });
  await tx.execute(
    sql`select graphile_worker.add_job('deliver_webhook', ${payload}::json, run_at => now() + ${`${delay} milliseconds`}::interval, max_attempts => ${MAX_WEBHOOK_JOB_ATTEMPTS}::smallint, flags => array[${endpointId}::text])`,
  );
}

/**
 * Success clears the streak. An event's first failed attempt extends it; after 25
 * consecutive failed events spread over at least 24 hours the endpoint is disabled.
 */
async function keepFailureStreak(
  tx: Queryable,
  endpointId: string,
  succeeded: boolean,
  countsAsEvent: boolean,
  now: Date,
) {
  if (succeeded) {
    await clearStreakQuery(tx, { id: endpointId });
    return;
  }
  if (!countsAsEvent) return;
  await tx.execute(sql`
    update webhook_endpoints set
      failure_count = failure_count + 1,
      first_failure_at = coalesce(first_failure_at, ${now.toISOString()}::timestamptz),
      enabled = case
        when failure_count + 1 >= ${DISABLE_AFTER_FAILED_EVENTS}
         and ${now.toISOString()}::timestamptz - coalesce(first_failure_at, ${now.toISOString()}::timestamptz) >= ${`${DISABLE_AFTER_MS} milliseconds`}::interval
        then false else enabled end,
      disabled_reason = case
        when failure_count + 1 >= ${DISABLE_AFTER_FAILED_EVENTS}
         and ${now.toISOString()}::timestamptz - coalesce(first_failure_at, ${now.toISOString()}::timestamptz) >= ${`${DISABLE_AFTER_MS} milliseconds`}::interval
        then ${`Disabled after ${DISABLE_AFTER_FAILED_EVENTS} consecutive failed events over at least 24 hours`} else disabled_reason end
    where id = ${endpointId}`);
}
