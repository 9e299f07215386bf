import { setTimeout as sleep } from "node:timers/promises";
import type { Runner, WorkerEvents } from "graphile-worker";
import type { Logger } from "pino";
import { waitAtMost } from "./wait-at-most.js";

export interface StartedRunner {
  runner: Runner;
  /** The id its jobs are locked under (`locked_by`). */
  poolId: string;
  /** Closes the runner's database connections once it has stopped (bounded: a dead one may hold some). */
  close(): Promise<void>;
}

export interface SupervisorOptions {
  /** Starts a runner whose pool reports to `events`; rejects while the database is out of reach. */
  start(): Promise<StartedRunner>;
  events: WorkerEvents;
  /** Releases the jobs a dead runner held, so that any worker takes them again. */
  release(poolId: string): Promise<void>;
  /** The runner's pool is gone: stop beating for it. */
  forget(poolId: string): void;
  logger: Logger;
}

/** How long a dead runner may take to hand back its connections before it is left behind. */
const STOP_DEAD_RUNNER_MS = 5_000;

/**
 * Keeps a graphile-worker runner going through a database restart. When graphile-worker
 * cannot record a job's outcome ("Could not completeJobs/failJobs; queue is in an
 * inconsistent state"), it shuts its worker pool down for good, and after two such
 * failures the pool never even settles (its batch counter goes negative): the process
 * lived on, relaying and beating, but ran no job again, and the jobs it held stayed
 * locked under a heartbeat kept fresh. So a pool shutting down without being asked is
 * taken for dead: once its jobs have finished (graceful shutdown complete), they are
 * released, the runner's connections are closed, and a new runner starts, retried with
 * backoff until the database answers.
 */
export async function superviseRunner(options: SupervisorOptions): Promise<{ stop(): Promise<void> }> {
  let stopping = false;
  let current: StartedRunner | undefined;
  let restarting: Promise<void> = Promise.resolve();
  const stopped = new AbortController();

  /** Resolves once the pool of `started` stopped by itself and none of its jobs runs any more. */
  const deathOf = (started: StartedRunner) =>
    new Promise<string>((resolve) => {
      const ours = (payload: { workerPool: { id: string } }) => payload.workerPool.id === started.poolId;
      let reason = "";
      const onShutdown = (payload: { workerPool: { id: string }; message: string }) => {
        if (ours(payload)) reason = payload.message;
      };
      const onJobsDone = (payload: { workerPool: { id: string } }) => {
        if (ours(payload)) done(reason || "worker pool shut down");
      };
      const done = (why: string) => {
        options.events.off("pool:gracefulShutdown", onShutdown);
        options.events.off("pool:gracefulShutdown:complete", onJobsDone);
        options.events.off("pool:gracefulShutdown:error", onJobsDone);
        resolve(why);
      };
      options.events.on("pool:gracefulShutdown", onShutdown);
      options.events.on("pool:gracefulShutdown:complete", onJobsDone);
      options.events.on("pool:gracefulShutdown:error", onJobsDone);
      started.runner.promise.then(
        () => done("runner stopped"),
        (error: unknown) => done(String(error)),
      );
    });

  const watch = (started: StartedRunner) => {
    current = started;
    void deathOf(started).then(async (reason) => {
      if (stopping) return;
      options.logger.error({ poolId: started.poolId, reason }, "the job runner stopped by itself; starting another");
      current = undefined;
      // Its database pool: closed, without waiting on a pool that never settles.
      await waitAtMost(started.runner.stop(), STOP_DEAD_RUNNER_MS);
      await started.close();
      restarting = restart(started.poolId);
    });
  };

  const restart = async (deadPoolId: string) => {
    options.forget(deadPoolId);
    for (let attempt = 0; !stopping; attempt++) {
      try {
        await options.release(deadPoolId);
        const started = await options.start();
        if (stopping) {
          await started.runner.stop();
          await started.close();
          return;
        }
        watch(started);
        options.logger.info({ poolId: started.poolId }, "job runner restarted");
        return;
      } catch (error) {
        options.logger.error({ err: error, attempt }, "restarting the job runner failed; trying again");
        await sleep(Math.min(250 * 2 ** attempt, 5_000), undefined, { signal: stopped.signal }).catch(() => {});
      }
    }
  };

  watch(await options.start());

  return {
    stop: async () => {
      stopping = true;
      stopped.abort();
      await restarting;
      // A runner that stopped by itself meanwhile is already closed (or left behind).
      await current?.runner.stop().catch(() => {});
      await current?.close();
    },
  };
}
