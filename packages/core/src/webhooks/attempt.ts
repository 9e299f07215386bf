import {
  events,
  isForeignKeyViolation,
  newId,
  postgresClientOf,
  type Queryable,
  reusableQuery,
  tableRowOf,
  type webhookDeliveries,
  webhookEndpoints,
} from "@parley/db";
import type { WebhookDelivery } from "@parley/schema";
import { hostOf, markFailed, withSpan, withTraceContext } from "@parley/tracing";
import { eq, sql } from "drizzle-orm";
import { apiTimestamp } from "../serialize/timestamp.js";
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

type PostgresClient = ReturnType<typeof postgresClientOf>;

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
    next_retry_at: row.nextRetryAt ? apiTimestamp(row.nextRetryAt) : null,
    created_at: apiTimestamp(row.createdAt),
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
 * attempt of the schedule in the same statement as the record. Undefined when there is
 * nothing to send (the endpoint was deleted or disabled meanwhile), or when the endpoint
 * was deleted while the attempt was in flight (the attempt is dropped, not recorded).
 */
export async function attemptWebhook(
  db: Queryable,
  sender: WebhookSender,
  request: AttemptRequest,
): Promise<WebhookDeliveryRow | undefined> {
  const [found] = await findEndpointAndEventQuery(db, { endpointId: request.endpointId, eventId: request.eventId });
  if (!found) return undefined;
  const { endpoint, event } = found;
  if (request.automatic && !endpoint.enabled) return undefined;
  if (!sameTenant(endpoint, event)) return undefined;
  const row = await sendAttempt(sender, endpoint, event, request);
  const countsAsEvents = request.automatic && request.attempt === 1;
  if (!(await recordUnlessDeleted(() => recordAttempts(db, row.endpointId, [row], { countsAsEvents })))) {
    return undefined;
  }
  return row;
}

export interface BatchAttemptRequest {
  endpointId: string;
  /** In the order to send them. */
  eventIds: string[];
  fastRetry: boolean;
}

/**
 * The first automatic attempts of several events to one endpoint, one after another, as
 * one job: the endpoint and the events are read by one statement and the attempts
 * recorded by one (recordAttempts), instead of a job, a read and a record per event. The
 * batch stops at its first failed attempt: the events after it are queued as jobs of
 * their own, unattempted, so a receiver that hangs holds the batch for one timeout, as it
 * holds a single event's job. Returns the attempts made (none when the endpoint was
 * deleted meanwhile: they are not recorded, and nothing is queued).
 */
export async function attemptWebhookBatch(
  db: Queryable,
  sender: WebhookSender,
  request: BatchAttemptRequest,
): Promise<WebhookDeliveryRow[]> {
  const { endpoint, found } = await endpointAndEvents(db, request.endpointId, request.eventIds);
  if (!endpoint?.enabled) return [];
  const byId = new Map(found.map((event) => [event.id, event]));
  const ordered = request.eventIds.flatMap((id) => byId.get(id) ?? []).filter((event) => sameTenant(endpoint, event));
  const attempts: WebhookDeliveryRow[] = [];
  for (const event of ordered) {
    const row = await sendAttempt(sender, endpoint, event, {
      attempt: 1,
      automatic: true,
      fastRetry: request.fastRetry,
    });
    attempts.push(row);
    if (!row.succeeded) break;
  }
  const unattempted = ordered.slice(attempts.length).map((event) => event.id);
  const recorded = await recordUnlessDeleted(() =>
    recordAttempts(db, endpoint.id, attempts, { countsAsEvents: true, unattempted }),
  );
  return recorded ? attempts : [];
}

/**
 * The endpoint and those of the events that exist, by two statements sent together: postgres.js
 * templates, prepared once per connection, their rows decoded as drizzle would (tableRowOf).
 * A drizzle query built for each batch's list of ids, its joined rows mapped by drizzle,
 * cost the worker a twentieth of its CPU at 2,300 webhook deliveries a second.
 */
async function endpointAndEvents(
  db: Queryable,
  endpointId: string,
  eventIds: string[],
): Promise<{ endpoint: WebhookEndpointRow | undefined; found: EventRow[] }> {
  const pg = postgresClientOf(db);
  const [endpointRows, eventRows] = await Promise.all([
    pg`select * from webhook_endpoints where id = ${endpointId}`,
    pg`select * from events where id = any(${eventIds}::text[])`,
  ]);
  const [endpointRow] = endpointRows;
  return {
    endpoint: endpointRow ? tableRowOf(webhookEndpoints, endpointRow) : undefined,
    found: eventRows.map((row) => tableRowOf(events, row)),
  };
}

/**
 * Runs `record`; false when the endpoint was deleted while its attempt was in flight
 * (the record's foreign key finds no endpoint). That is the expected race of a delete,
 * not a fault: the attempt is dropped with the endpoint's history, and no retry follows.
 */
async function recordUnlessDeleted(record: () => Promise<unknown>): Promise<boolean> {
  try {
    await record();
    return true;
  } catch (error) {
    if (isForeignKeyViolation(error, ENDPOINT_FOREIGN_KEY)) return false;
    throw error;
  }
}

const ENDPOINT_FOREIGN_KEY = "webhook_deliveries_endpoint_id_webhook_endpoints_id_fk";

function sameTenant(endpoint: WebhookEndpointRow, event: EventRow): boolean {
  return event.organizationId === endpoint.organizationId && event.environment === endpoint.environment;
}

/** POSTs one event and gives the attempt's record, with its next attempt when one is due. */
async function sendAttempt(
  sender: WebhookSender,
  endpoint: WebhookEndpointRow,
  event: EventRow,
  request: Pick<AttemptRequest, "attempt" | "automatic" | "fastRetry">,
): Promise<WebhookDeliveryRow> {
  const deliveryId = newId("webhookDelivery");
  const response = await tracedSend(sender, signedWebhook(endpoint, event, deliveryId), event, request.attempt);
  const delay = request.automatic && !response.succeeded ? nextRetryDelayMs(request.attempt, request.fastRetry) : null;
  const now = new Date();
  return {
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
    nextRetryAt: delay === null ? null : new Date(now.getTime() + delay),
    createdAt: now,
  };
}

/**
 * The POST in a span of the event's trace (see `traceparent` on events): the endpoint's host,
 * never its path or query (a receiver's URL may hold a token), nor the body or headers.
 */
function tracedSend(sender: WebhookSender, request: WebhookRequest, event: EventRow, attempt: number) {
  const attributes = () => ({
    "parley.event_type": event.type,
    "parley.event_id": event.id,
    "parley.webhook.attempt": attempt,
    "http.request.method": "POST",
    "server.address": hostOf(request.url),
  });
  return withSpan("webhook attempt", { kind: "client", traceparent: event.traceparent, attributes }, async (span) => {
    const response = await sender.send({ ...request, headers: withTraceContext(request.headers) });
    if (response.status !== null) span.setAttribute("http.response.status_code", response.status);
    if (!response.succeeded) markFailed(span, response.status === null ? "no_response" : `status_${response.status}`);
    return response;
  });
}

/**
 * The first attempts of events as single-event jobs in their order, flagged with their
 * endpoint like every delivery: a SELECT to run inside another statement.
 */
function firstAttemptJobs(pg: PostgresClient, endpointId: string, eventIds: string[]) {
  return pg`
    select graphile_worker.add_jobs(array(
      select row('deliver_webhook', json_build_object('event_id', event_id, 'endpoint_id', ${endpointId}::text, 'attempt', 1),
                 null, null, ${MAX_WEBHOOK_JOB_ATTEMPTS}::int, null, null, array[${endpointId}::text])::graphile_worker.job_spec
      from unnest(${eventIds}::text[]) with ordinality as ids(event_id, position)
      order by position
    )) as job`;
}

/**
 * Attempts to one endpoint recorded in one statement (atomic without a transaction, one
 * round trip whatever their number): their rows; the endpoint's failure streak as they
 * leave it; after a failed automatic attempt, the next attempt of the schedule; and the
 * first attempts of the events a batch did not reach (`unattempted`), as jobs of their own.
 * The attempts are successes, then at most one failure (a batch stops at its first).
 *
 * Success clears the streak. A failed attempt that counts as an event (an event's first
 * automatic attempt) extends it; after 25 consecutive failed events spread over at least
 * 24 hours the endpoint is disabled. Jobs are deliver_webhook jobs flagged with their
 * endpoint, as every one is (the worker's per-endpoint cap).
 */
async function recordAttempts(
  db: Queryable,
  endpointId: string,
  rows: readonly WebhookDeliveryRow[],
  { countsAsEvents, unattempted = [] }: { countsAsEvents: boolean; unattempted?: readonly string[] },
) {
  const pg = postgresClientOf(db);
  const last = rows.at(-1);
  const failed = last && !last.succeeded ? last : undefined;
  // A success before the failure ended the streak the failure starts again.
  const reset = rows.some((row) => row.succeeded);
  const streak =
    failed && countsAsEvents
      ? failureStreak(pg, endpointId, failed.createdAt.toISOString(), reset)
      : reset
        ? pg`update webhook_endpoints set failure_count = 0, first_failure_at = null
             where id = ${endpointId} and failure_count > 0`
        : undefined;
  const nextAttempt = failed?.nextRetryAt
    ? JSON.stringify({ event_id: failed.eventId, endpoint_id: endpointId, attempt: failed.attempt + 1 })
    : null;
  // Only a statement that queues names graphile_worker: an API whose database no worker
  // has prepared yet still records attempts by hand. A SELECT in WITH runs only where the
  // statement reads it: the final select counts each.
  const jobs = [
    nextAttempt
      ? pg`select graphile_worker.add_job('deliver_webhook', ${nextAttempt}::json,
             run_at => ${failed?.nextRetryAt?.toISOString() ?? null}::timestamptz,
             max_attempts => ${MAX_WEBHOOK_JOB_ATTEMPTS}::smallint, flags => array[${endpointId}::text]) as job`
      : undefined,
    unattempted.length > 0 ? firstAttemptJobs(pg, endpointId, [...unattempted]) : undefined,
  ].filter((job) => job !== undefined);
  const queued = jobs.map((job, index) => pg`, ${pg(`jobs_${index}`)} as (${job})`);
  const counted = jobs.map((_, index) => pg`(select count(*) from ${pg(`jobs_${index}`)})`);
  // The rows travel as one JSON array, their timestamps as ISO text.
  await pg`
    with deliveries as (
      insert into webhook_deliveries (id, organization_id, environment, endpoint_id, event_id, event_type, attempt,
        succeeded, response_status, duration_ms, response_excerpt, error, next_retry_at, created_at)
      select r."id", r."organizationId", r."environment"::environment, r."endpointId", r."eventId", r."eventType",
        r."attempt", r."succeeded", r."responseStatus", r."durationMs", r."responseExcerpt", r."error",
        r."nextRetryAt", r."createdAt"
      from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r("id" text, "organizationId" text,
        "environment" text, "endpointId" text, "eventId" text, "eventType" text, "attempt" int,
        "succeeded" boolean, "responseStatus" int, "durationMs" int, "responseExcerpt" text, "error" text,
        "nextRetryAt" timestamptz, "createdAt" timestamptz)
    )
    ${streak ? pg`, streak as (${streak})` : pg``}
    ${queued.reduce((all, cte) => pg`${all}${cte}`, pg``)}
    select ${counted.reduce((all, count) => pg`${all} + ${count}`, pg`0`)} as queued`;
}

/**
 * The endpoint's failure streak after a failed attempt that counts as an event, `reset`
 * when a success came first (the streak the failure extends is then none): one more
 * failed event, since the first of them; the endpoint disabled once the streak is long
 * enough in count and in time.
 */
function failureStreak(pg: PostgresClient, endpointId: string, now: string, reset: boolean) {
  const count = pg`(case when ${reset}::boolean then 0 else failure_count end)`;
  const since = pg`(case when ${reset}::boolean then ${now}::timestamptz else coalesce(first_failure_at, ${now}::timestamptz) end)`;
  const disables = pg`${count} + 1 >= ${DISABLE_AFTER_FAILED_EVENTS}
    and ${now}::timestamptz - ${since} >= ${`${DISABLE_AFTER_MS} milliseconds`}::interval`;
  return pg`update webhook_endpoints set
      failure_count = ${count} + 1,
      first_failure_at = ${since},
      enabled = case when ${disables} then false else enabled end,
      disabled_reason = case when ${disables} then ${DISABLED_REASON} else disabled_reason end
    where id = ${endpointId}`;
}

const DISABLED_REASON = `Disabled after ${DISABLE_AFTER_FAILED_EVENTS} consecutive failed events over at least 24 hours`;

// Every automatic delivery runs it: built once (see reusableQuery). No row when either is gone.
const findEndpointAndEventQuery = reusableQuery((db) =>
  db
    .select({ endpoint: webhookEndpoints, event: events })
    .from(webhookEndpoints)
    .innerJoin(events, eq(events.id, sql.placeholder("eventId")))
    .where(eq(webhookEndpoints.id, sql.placeholder("endpointId")))
    .prepare("find_webhook_endpoint_and_event"),
);
