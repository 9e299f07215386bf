import type { SandboxOptions } from "@parley/channels";
import { createDatabaseClient } from "@parley/db";
import { Logger as GraphileLogger, makeWorkerUtils, type Runner, run, type TaskList } from "graphile-worker";
import type { Logger } from "pino";
import type { WorkerContext } from "./context.js";
import { startLiveness } from "./liveness/heartbeats.js";
import { startOutboxRelay } from "./relay/outbox-relay.js";
import { applyReceipt } from "./tasks/apply-receipt.js";
import { cleanupExpired } from "./tasks/cleanup-expired.js";
import { deliverMessage } from "./tasks/deliver-message.js";

export { relayOnce } from "./relay/outbox-relay.js";
export { DELIVERY_MAX_ATTEMPTS } from "./tasks/deliver-message.js";

const crontab = "*/5 * * * * cleanup_expired";

export interface WorkerOptions {
  connectionString: string;
  logger: Logger;
  /** The public address of the API, without `/v1`. */
  publicBaseUrl: string;
  concurrency?: number;
  sandbox?: Partial<SandboxOptions>;
  /** How often the outbox relay looks for new sends when nothing wakes it. */
  relayPollMs?: number;
  heartbeatIntervalMs?: number;
  /** A worker silent this long is taken for dead and its jobs are released. */
  heartbeatTimeoutMs?: number;
}

export interface RunningWorker {
  /** Relays new sends now (a latency hint from an API in the same process). */
  wake(): void;
  /** Finishes the jobs in hand, releases the rest, then resolves. */
  stop(): Promise<void>;
}

export const defaultSandboxOptions: SandboxOptions = { deliveryDelayMs: 500, readDelayMs: 1000 };

export function createTaskList(context: WorkerContext): TaskList {
  return {
    deliver_message: deliverMessage(context),
    apply_receipt: applyReceipt(context),
    cleanup_expired: cleanupExpired,
  };
}

function graphileLogger(logger: Logger) {
  return new GraphileLogger((scope) => (level, message, meta) => {
    const child = logger.child({ component: "worker", ...scope });
    const method = level === "error" ? "error" : level === "warning" ? "warn" : "debug";
    child[method](meta ?? {}, message);
  });
}

export async function startWorker(options: WorkerOptions): Promise<RunningWorker> {
  const client = createDatabaseClient(options.connectionString, { max: 5 });
  const context: WorkerContext = {
    db: client.db,
    logger: options.logger,
    publicBaseUrl: options.publicBaseUrl,
    adapters: { sandbox: { ...defaultSandboxOptions, ...options.sandbox } },
  };
  const logger = graphileLogger(options.logger);
  const runner: Runner = await run({
    connectionString: options.connectionString,
    concurrency: options.concurrency ?? 10,
    taskList: createTaskList(context),
    crontab,
    noHandleSignals: true,
    logger,
  });
  const utils = await makeWorkerUtils({ connectionString: options.connectionString, logger });
  const liveness = startLiveness(client.sql, options.logger, {
    intervalMs: options.heartbeatIntervalMs ?? 5_000,
    timeoutMs: options.heartbeatTimeoutMs ?? 30_000,
    forceUnlock: (workerIds) => utils.forceUnlockWorkers(workerIds),
  });
  runner.events.on("worker:create", ({ worker }) => liveness.track(worker.workerId));
  const relay = startOutboxRelay(client.sql, options.logger, options.relayPollMs ?? 25);
  return {
    wake: () => relay.wake(),
    stop: async () => {
      await relay.stop();
      await runner.stop();
      await liveness.stop();
      await utils.release();
      await client.close();
    },
  };
}
export { loadWorkerConfig, type WorkerConfig, workerOptionsFrom } from "./config.js";
