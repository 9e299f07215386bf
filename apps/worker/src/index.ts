import { Logger as GraphileLogger, type Runner, run, type TaskList } from "graphile-worker";
import type { Logger } from "pino";
import { cleanupExpired } from "./tasks/cleanup-expired.js";

export const taskList: TaskList = {
  cleanup_expired: cleanupExpired,
};

const crontab = "*/5 * * * * cleanup_expired";

export interface WorkerOptions {
  connectionString: string;
  logger: Logger;
  concurrency?: number;
}

export interface RunningWorker {
  /** Finishes the jobs in hand, releases the rest, then resolves. */
  stop(): Promise<void>;
}

function graphileLogger(logger: Logger) {
  return new GraphileLogger((scope) => (level, message, meta) => {
    const child = logger.child({ component: "worker", ...scope });
    const method = level === "error" ? "error" : level === "warning" ? "warn" : level === "debug" ? "debug" : "info";
    child[method](meta ?? {}, message);
  });
}

export async function startWorker(options: WorkerOptions): Promise<RunningWorker> {
  const runner: Runner = await run({
    connectionString: options.connectionString,
    concurrency: options.concurrency ?? 5,
    taskList,
    crontab,
    noHandleSignals: true,
    logger: graphileLogger(options.logger),
  });
  return { stop: () => runner.stop() };
}
