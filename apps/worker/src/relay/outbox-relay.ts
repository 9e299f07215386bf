import { setTimeout as sleep } from "node:timers/promises";
import { RELAY_BATCH_SIZE } from "@parley/core";
import type { Logger } from "pino";
import type postgres from "postgres";

/** After a pass that moved rows, the least wait before the next one. */
const GATHER_MS = 2;
/** The longest wait: a steady flow gathers into passes of several rows, each a job, not one. */
const MAX_GATHER_MS = 50;

export interface OutboxRelay {
  /** Runs a pass soon: a hint after a send, never needed for correctness. */
  wake(): void;
  stop(): Promise<void>;
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
