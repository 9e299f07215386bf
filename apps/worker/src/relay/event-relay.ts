import { MAX_WEBHOOK_JOB_ATTEMPTS } from "@parley/core";
import type postgres from "postgres";

import { RELAY_BATCH_SIZE } from "./outbox-relay.js";

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
 */
export function eventRelay(sql: postgres.Sql) {
  return sql`
    event_batch as (
      delete from event_outbox
      where id in (select id from event_outbox order by id limit ${RELAY_BATCH_SIZE} for update skip locked)
      returning event_id
    ),
    event_pairs as (
      select e.id as event_id, w.id as endpoint_id
      from event_batch b
      join events e on e.id = b.event_id
      join webhook_endpoints w
        on w.organization_id = e.organization_id
       and w.environment = e.environment
       and w.enabled
       and (e.type = any(w.events) or '*' = any(w.events))
    ),
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
