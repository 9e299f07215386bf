import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import type postgres from "postgres";

/** Outbox rows one relay statement takes at most, of each outbox. */
export const RELAY_BATCH_SIZE = 500;

/** After a pass that moved rows, the least wait before the next one. */
const GATHER_MS = 2;
/** The longest wait: a steady flow gathers into passes of several rows, each a job, not one. */
const MAX_GATHER_MS = 50;

export interface OutboxRelay {
  /** Runs a pass soon: a hint after a send, never needed for correctness. */
  wake(): void;
  stop(): Promise<void>;
}

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
export function messageRelay(sql: postgres.Sql) {
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
        select row('deliver_message', json_strip_nulls(json_build_object('message_ids', message_ids, 'traceparents', traceparents)), null, null, null, null, null, null)::graphile_worker.job_spec
        from message_chunks
        order by message_ids[1]
      ))
      where exists (select 1 from message_batch)
    )`;
}

/**
 * Runs `pass` (a relay pass, `relayBothOnce`) in a loop: again at once after a full batch, else
 * when woken or after `pollMs`. The wake-ups come from API processes (a NOTIFY after a
 * change commits, `createOutboxWaker`) and from this worker's own tasks; a wake-up that
 * comes during a pass makes another pass follow at once, so no row waits for the poll
 * because it committed while the previous pass ran. The poll only covers wake-ups lost
 * (a database restart, a writer that sends none).
 */
export function startOutboxRelay(
  sql: postgres.Sql,
  logger: Logger,
  pollMs: number,
  pass: (sql: postgres.Sql) => Promise<number>,
): OutboxRelay {
  let running = true;
  let woken = false;
  let wakeUp: (() => void) | undefined;
  const loop = (async () => {
    while (running) {
      woken = false;
      let relayed = 0;
      try {
        relayed = await pass(sql);
      } catch (error) {
        logger.error({ err: error }, "outbox relay pass failed");
      }
      if (relayed >= RELAY_BATCH_SIZE) continue;
      // Rows are coming: let the next ones gather for a moment rather than relay each
      // wake-up's few rows in a statement (and a jobs:insert NOTIFY) of its own.
      // The wait grows with the rows the pass moved: a single send or event (a quiet
      // minute) waits 2 ms, a steady flow up to 20 ms, so its delivery jobs carry several
      // messages each instead of paying the job queue's statements for one or two.
      if (relayed > 0) await sleep(Math.min(MAX_GATHER_MS, GATHER_MS * relayed));
      if (woken) continue;
      await Promise.race([sleep(pollMs), new Promise<void>((resolve) => (wakeUp = resolve))]);
      wakeUp = undefined;
    }
  })();
  const wake = () => {
    woken = true;
    wakeUp?.();
  };
  return {
    wake,
    stop: async () => {
      running = false;
      wake();
      await loop;
    },
  };
}
