import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import type postgres from "postgres";

/** Outbox rows one relay statement takes at most, of each outbox. */
export const RELAY_BATCH_SIZE = 500;

/** After a pass that moved rows, the least wait before the next one. */
const GATHER_MS = 2;

export interface OutboxRelay {
  /** Runs a pass soon: a hint after a send, never needed for correctness. */
  wake(): void;
  stop(): Promise<void>;
}

/**
 * Moves rows of `message_outbox` into `deliver_message` jobs (with the row's `traceparent`,
 * when tracing recorded one: the job's span continues the send's trace). One statement deletes a
 * batch and adds its jobs, so a row disappears exactly when its job exists; `SKIP LOCKED`
 * lets several workers relay side by side. One `add_jobs` (one NOTIFY) per batch keeps
 * the job queue off the send path, and none for an empty batch: graphile-worker's
 * `add_jobs` notifies even when given no job, and every worker would look for one.
 * The common table expressions of the statement; `message_batch` holds the rows taken.
 * The rows are deleted by key (`= any(array(...))`): `in (subquery)` was planned as a
 * hash join over the whole outbox, read row by row, dead rows included, until vacuum.
 */
export function messageRelay(sql: postgres.Sql) {
  return sql`
    message_batch as (
      delete from message_outbox
      where id = any(array(select id from message_outbox order by id limit ${RELAY_BATCH_SIZE} for update skip locked))
      returning message_id, traceparent
    ),
    message_jobs as (
      select graphile_worker.add_jobs(array(
        select row('deliver_message', json_strip_nulls(json_build_object('message_id', message_id, 'traceparent', traceparent)), null, null, null, null, null, null)::graphile_worker.job_spec
        from message_batch
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
      if (relayed > 0) await sleep(GATHER_MS);
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
