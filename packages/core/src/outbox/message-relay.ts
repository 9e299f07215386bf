import type { SqlClient, SqlFragment } from "@parley/db";

/** Outbox rows one relay statement takes at most, of each outbox. */
export const RELAY_BATCH_SIZE = 500;

/** The most messages one delivery job sends on its channel, one after another. */
export const DELIVERY_BATCH_SIZE = 50;

/**
 * Moves rows of `message_outbox` into `deliver_message` jobs: for each channel, jobs of up
 * to DELIVERY_BATCH_SIZE of its messages each (with their `traceparent`s, when tracing
 * recorded them), in the order they were sent (a message
 * with no conversation or channel any more goes in a job of its own kind, which finds
 * nothing to deliver). One statement deletes a batch and adds its jobs, so a row
 * disappears exactly when its job exists; `SKIP LOCKED` lets several workers relay side
 * by side. One `add_jobs` (one NOTIFY) per batch keeps the job queue off the send path,
 * and none for an empty batch: graphile-worker's `add_jobs` notifies even when given no
 * job, and every worker would look for one.
 * The common table expressions of the statement; `message_batch` holds the rows taken.
 * The rows are deleted by key (`= any(array(...))`): `in (subquery)` was planned as a
 * hash join over the whole outbox, read row by row, dead rows included, until vacuum;
 * each message and its conversation are read by key too (`offset 0`, see eventRelay).
 */
export function messageRelay(sql: SqlClient) {
  return sql`
    message_batch as (
      delete from message_outbox
      where id = any(array(select id from message_outbox order by id limit ${RELAY_BATCH_SIZE} for update skip locked))
      returning id, message_id, traceparent
    ),
    message_chunks as (
      select array_agg(message_id order by id) as message_ids,
             -- Tracing on: each message's trace, beside its id (the job continues the first, links the others).
             case when bool_or(traceparent is not null) then array_agg(traceparent order by id) end as traceparents
      from (
        select b.id, b.message_id, b.traceparent, c.channel_id,
               (row_number() over (partition by c.channel_id order by b.id) - 1) / ${DELIVERY_BATCH_SIZE} as chunk
        from message_batch b
        left join lateral (select conversation_id from messages where id = b.message_id offset 0) as m on true
        left join lateral (select channel_id from conversations where id = m.conversation_id offset 0) as c on true
      ) as numbered
      group by channel_id, chunk
    ),
    message_jobs as (
      select graphile_worker.add_jobs(array(
        select ${deliveryJobSpec(sql, sql`message_ids`, sql`traceparents`)}
        from message_chunks
        order by message_ids[1]
      ))
      where exists (select 1 from message_batch)
    )`;
}

/**
 * A `deliver_message` job's spec: the SQL of its messages' ids (a text array) and of
 * their `traceparent`s beside them (an array, or null with tracing off). The relay's jobs
 * and a send's own (see insertSentMessage) are made alike.
 */
export function deliveryJobSpec(sql: SqlClient, messageIds: SqlFragment, traceparents: SqlFragment) {
  return sql`row('deliver_message', json_strip_nulls(json_build_object('message_ids', ${messageIds}, 'traceparents', ${traceparents})), null, null, null, null, null, null)::graphile_worker.job_spec`;
}
