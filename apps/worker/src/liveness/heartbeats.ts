import type { Logger } from "pino";
import type postgres from "postgres";

export interface Liveness {
  /** Beats for this id from now on: the `locked_by` of the jobs this process takes (its pool's id). */
  track(lockerId: string): void;
  /** Beats no more for this id (a pool that stopped): its row goes stale like a dead worker's. */
  forget(lockerId: string): void;
  stop(): Promise<void>;
}

/**
 * Keeps a heartbeat row per graphile-worker pool of this process (its jobs are locked under
 * the pool's id), and releases the jobs of pools whose heartbeat stopped (a crashed
 * process): another worker then picks them up, instead of after graphile-worker's 4-hour
 * lock expiry.
 */
export function startLiveness(
  sql: postgres.Sql,
  logger: Logger,
  options: { intervalMs: number; timeoutMs: number; forceUnlock: (lockerIds: string[]) => Promise<void> },
): Liveness {
  const workerIds = new Set<string>();
  // The ids go as JSON text, not `sql.array`: before postgres.js has fetched the array
  // types (the first queries of a new client) `sql.array` sends a plain string, so the
  // first beat failed ("malformed array literal") and a process killed before the next
  // one left its jobs locked for 4 hours.
  const idsJson = () => JSON.stringify([...workerIds]);
  const beat = async () => {
    if (workerIds.size > 0) {
      await sql`
        insert into worker_heartbeats (worker_id, last_seen_at)
        select value, now() from json_array_elements_text(${idsJson()}::json)
        on conflict (worker_id) do update set last_seen_at = now()`;
    }
    const dead = await sql<{ worker_id: string }[]>`
      delete from worker_heartbeats
      where last_seen_at < now() - ${`${options.timeoutMs} milliseconds`}::interval
      returning worker_id`;
    if (dead.length > 0) {
      const ids = dead.map((row) => row.worker_id);
      await options.forceUnlock(ids);
      logger.warn({ workerIds: ids }, "released the jobs of workers that stopped beating");
    }
  };
  const timer = setInterval(() => {
    beat().catch((error: unknown) => logger.error({ err: error }, "worker heartbeat failed"));
  }, options.intervalMs);
  return {
    track: (lockerId) => {
      workerIds.add(lockerId);
      beat().catch((error: unknown) => logger.error({ err: error }, "worker heartbeat failed"));
    },
    forget: (lockerId) => {
      workerIds.delete(lockerId);
    },
    stop: async () => {
      clearInterval(timer);
      if (workerIds.size > 0)
        await sql`
          delete from worker_heartbeats
          where worker_id in (select value from json_array_elements_text(${idsJson()}::json))`;
    },
  };
}
