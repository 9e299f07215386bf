import type { SqlClient } from "@parley/db";
import { MAX_WEBHOOK_JOB_ATTEMPTS } from "../webhooks/schedule.js";
import { RELAY_BATCH_SIZE } from "./message-relay.js";

/** The most events one delivery job sends to its endpoint, one after another. */
export const WEBHOOK_BATCH_SIZE = 20;

/**
 * Fans a batch of recorded events out to webhooks: for each enabled subscribed endpoint of
 * the same organization and environment, `deliver_webhook` jobs of up to
 * WEBHOOK_BATCH_SIZE of its events each, in the order they happened (their first
 * attempts, made one after another: see attemptWebhookBatch). The
 * outbox rows are deleted by the same statement that adds the jobs, so an event is
 * relayed exactly when its jobs exist; `SKIP LOCKED` lets several workers share the work.
 * Each job is flagged with its endpoint id, for the worker's per-endpoint cap (`EndpointSlots`).
 * No `add_jobs` (and so no NOTIFY) when no endpoint wants the batch, as in `messageRelay`.
 * The common table expressions of the statement; `event_batch` holds the events taken.
 *
 * The relay reads each event by its key and each event's endpoints by the event's tenant,
 * whatever the planner estimates: the statement is prepared, and a generic plan made on
 * stale statistics (an outbox that just emptied, a burst of new events) joined the
 * endpoints to every event of their organization, then kept the batch's: a pass took
 * 20 ms at 30,000 events and grew with every event recorded. `offset 0` keeps each
 * lateral subquery a probe of its own, run for the rows before it.
 */
export function eventRelay(sql: SqlClient) {
  return sql`
    event_batch as (
      delete from event_outbox
      where id = any(array(select id from event_outbox order by id limit ${RELAY_BATCH_SIZE} for update skip locked))
      returning event_id
    ),
    event_pairs as (
      select e.id as event_id, w.id as endpoint_id
      from event_batch b
      cross join lateral (
        select id, organization_id, environment, type from events where id = b.event_id offset 0
      ) as e
      cross join lateral (${subscribedEndpoints(sql, sql`e`)}) as w
    ),
    ${webhookJobs(sql)}`;
}

/**
 * The ids of the endpoints that want an event (`event`: the SQL of a row with the
 * event's `organization_id`, `environment` and `type`): enabled, of its tenant, subscribed
 * to its type or to every type. A probe of its own for each event (`offset 0`, see eventRelay).
 */
export function subscribedEndpoints(sql: SqlClient, event: ReturnType<SqlClient>) {
  return sql`
    select id from webhook_endpoints
    where organization_id = ${event}.organization_id
      and environment = ${event}.environment
      and enabled
      and (${event}.type = any(events) or '*' = any(events))
    offset 0`;
}

/**
 * The `deliver_webhook` jobs of `event_pairs` (a CTE of `event_id`, `endpoint_id`): per
 * endpoint, chunks of up to WEBHOOK_BATCH_SIZE events in their order, added by one
 * `add_jobs` (none when there is no pair). The relay's jobs and an event's own (see
 * recordEvents) are made alike; `event_jobs` must be read for them to be added.
 */
export function webhookJobs(sql: SqlClient) {
  return sql`
    event_chunks as (
      select endpoint_id, array_agg(event_id order by event_id) as event_ids
      from (
        select event_id, endpoint_id,
               (row_number() over (partition by endpoint_id order by event_id) - 1) / ${WEBHOOK_BATCH_SIZE} as chunk
        from event_pairs
      ) as numbered
      group by endpoint_id, chunk
    ),
    event_jobs as (
      select graphile_worker.add_jobs(array(
        select row('deliver_webhook',
                   json_build_object('event_ids', event_ids, 'endpoint_id', endpoint_id),
                   null, null, ${MAX_WEBHOOK_JOB_ATTEMPTS}::int, null, null, array[endpoint_id])::graphile_worker.job_spec
        from event_chunks
        order by event_ids[1]
      ))
      where exists (select 1 from event_pairs)
    )`;
}
