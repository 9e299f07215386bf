import pg from "pg";
import type { Logger } from "pino";
import { waitAtMost } from "./wait-at-most.js";

/** graphile-worker's own default (`maxPoolSize`): its workers share these, its LISTEN holds one. */
const JOB_QUEUE_POOL_SIZE = 10;

/**
 * The job runner's connections, in a pool this process owns rather than graphile-worker.
 * A runner that makes its own pool takes the pool's error listeners off when it stops,
 * then ends the pool without waiting: a connection still closing when PostgreSQL went away
 * (the soak's postmaster kills) emitted an error nobody listened to, and the worker process
 * died of it. These listeners stay for the pool's whole life; a cut connection is logged
 * and replaced, as pg does for any pool with a listener.
 */
export function createJobQueuePool(connectionString: string, logger: Logger): pg.Pool {
  const pool = new pg.Pool({ connectionString, max: JOB_QUEUE_POOL_SIZE });
  pool.on("error", (error) => logger.warn({ err: error }, "an idle job queue connection was cut"));
  pool.on("connect", (client) => {
    client.on("error", (error) => logger.warn({ err: error }, "a job queue connection was cut"));
  });
  return pool;
}

/**
 * Ends the pool without waiting on a connection a dead runner never gave back; errors of
 * its connections meanwhile still reach the listeners above.
 */
export async function closeJobQueuePool(pool: pg.Pool, waitMs: number): Promise<void> {
  await waitAtMost(pool.end(), waitMs);
}
