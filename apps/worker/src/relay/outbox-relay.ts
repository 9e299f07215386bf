import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import type postgres from "postgres";

const BATCH_SIZE = 500;

export interface OutboxRelay {
  /** Runs a pass soon: a hint after a send, never needed for correctness. */
  wake(): void;
  stop(): Promise<void>;
}

/**
 * Moves rows of `message_outbox` into `deliver_message` jobs. One statement deletes a
 * batch and adds its jobs, so a row disappears exactly when its job exists; `SKIP LOCKED`
 * lets several workers relay side by side. One `add_jobs` (one NOTIFY) per batch keeps
 * the job queue off the send path.
 */
export async function relayOnce(sql: postgres.Sql): Promise<number> {
  const [row] = await sql<{ relayed: number }[]>`
    with batch as (
      delete from message_outbox
      where id in (select id from message_outbox order by id limit ${BATCH_SIZE} for update skip locked)
      returning message_id
    ),
    added as (
      select 1 from graphile_worker.add_jobs(array(
        select row('deliver_message', json_build_object('message_id', message_id), null, null, null, null, null, null)::graphile_worker.job_spec
        from batch
      ))
    )
    select count(*)::int as relayed from added`;
  return row?.relayed ?? 0;
}

/** The first wait after a pass that found rows: the next ones double up to the poll interval. */
const BUSY_POLL_MS = 1;

/**
 * Runs `pass` (a relay of one outbox) in a loop: again at once after a full batch, else
 * after a wait or a wake. An API in another process cannot wake it (a NOTIFY per send
 * would serialise the send commits again), so while rows are coming the wait starts at
 * 1 ms and doubles with each empty pass up to `pollMs`: a steady flow is picked up within
 * a few milliseconds, and an idle relay costs no more than polling every `pollMs`.
 */
export function startOutboxRelay(
  sql: postgres.Sql,
  logger: Logger,
  pollMs: number,
  pass: (sql: postgres.Sql) => Promise<number> = relayOnce,
): OutboxRelay {
  let running = true;
  let wakeUp: (() => void) | undefined;
  let waitMs = pollMs;
  const loop = (async () => {
    while (running) {
      let relayed = 0;
      try {
        relayed = await pass(sql);
      } catch (error) {
        logger.error({ err: error }, "outbox relay pass failed");
      }
      if (relayed === BATCH_SIZE) continue;
      waitMs = relayed > 0 ? Math.min(BUSY_POLL_MS, pollMs) : Math.min(waitMs * 2, pollMs);
      await Promise.race([sleep(waitMs), new Promise<void>((resolve) => (wakeUp = resolve))]);
      wakeUp = undefined;
    }
  })();
  return {
    wake: () => wakeUp?.(),
    stop: async () => {
      running = false;
      wakeUp?.();
      await loop;
    },
  };
}
