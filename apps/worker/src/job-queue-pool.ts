import { type Logger as JobQueueLogger, makeWorkerUtils, type WorkerUtils } from "graphile-worker";
import pg from "pg";
import type { Logger } from "pino";
import { waitAtMost } from "./wait-at-most.js";

/** graphile-worker's own default (`maxPoolSize`): its workers share these, its LISTEN holds one. */
const JOB_QUEUE_POOL_SIZE = 10;
/** The utilities (migrations, unlocking a dead process's jobs) use one connection at a time. */
const JOB_QUEUE_UTILS_POOL_SIZE = 2;

/**
 * The job runner's connections, in a pool this process owns rather than graphile-worker.
 * A runner that makes its own pool takes the pool's error listeners off when it stops,
 * then ends the pool without waiting: a connection still closing when PostgreSQL went away
 * (the soak's postmaster kills) emitted an error nobody listened to, and the worker process
 * died of it. These listeners stay for the pool's whole life; a cut connection is logged
 * and replaced, as pg does for any pool with a listener.
 */
export function createJobQueuePool(connectionString: string, logger: Logger, max = JOB_QUEUE_POOL_SIZE): pg.Pool {
  // Idle connections are kept, as the postgres.js pools keep theirs: with pg's default (closed
  // after 10 s idle) a worker between bursts closed most of them, and the next burst's jobs
  // waited on new PostgreSQL backends, each preparing graphile-worker's statements anew.
  const pool = new pg.Pool({ connectionString, max, idleTimeoutMillis: 0 });
  pool.on("error", (error) => logger.warn({ err: error }, "an idle job queue connection was cut"));
  pool.on("connect", (client) => {
    client.on("error", (error) => logger.warn({ err: error }, "a job queue connection was cut"));
  });
  return pool;
}

/**
 * Opens every connection of the pool now (see DatabaseClient.open): all of them taken at
 * once, then given back.
 */
export async function openJobQueuePool(pool: pg.Pool): Promise<void> {
  const opened = await Promise.allSettled(Array.from({ length: pool.options.max }, () => pool.connect()));
  for (const each of opened) if (each.status === "fulfilled") each.value.release();
  const refused = opened.find((each) => each.status === "rejected");
  if (refused) throw refused.reason;
}

/**
 * Ends the pool without waiting on a connection a dead runner never gave back; errors of
 * its connections meanwhile still reach the listeners above.
 */
export async function closeJobQueuePool(pool: pg.Pool, waitMs: number): Promise<void> {
  await waitAtMost(pool.end(), waitMs);
}

export interface JobQueueUtils {
  utils: WorkerUtils;
  /** Releases the utilities, then closes their pool (bounded). */
  release(): Promise<void>;
}

/**
 * graphile-worker's utilities on a pool of ours, for the same reason as the runner's: on
 * its own pool, `release()` takes the pool's error listener off and ends the pool without
 * waiting, and a connection still closing when PostgreSQL went away (a start the soak's
 * postmaster kill cut short) emitted an error nobody listened to: the worker died of it.
 */
export async function openJobQueueUtils(
  connectionString: string,
  logger: Logger,
  options: { waitMs: number; jobQueueLogger?: JobQueueLogger },
): Promise<JobQueueUtils> {
  const { waitMs, jobQueueLogger } = options;
  const pool = createJobQueuePool(connectionString, logger, JOB_QUEUE_UTILS_POOL_SIZE);
  const made = makeWorkerUtils({ pgPool: pool, ...(jobQueueLogger ? { logger: jobQueueLogger } : {}) });
  const utils = await made.catch(async (error: unknown) => {
    await closeJobQueuePool(pool, waitMs);
    throw error;
  });
  return {
    utils,
    release: async () => {
      await utils.release();
      await closeJobQueuePool(pool, waitMs);
    },
  };
}
