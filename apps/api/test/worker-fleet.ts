import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { type RunningWorker, startWorker, type WorkerOptions } from "@parley/worker";
import { pino } from "pino";
import { afterEach, beforeAll } from "vitest";
import type { TestApi } from "./harness.js";

const workerMain = path.resolve(import.meta.dirname, "../../worker/dist/main.js");

export interface WorkerFleetOptions {
  heartbeatTimeoutMs: number;
  /** Environment of the spawned worker processes, beyond the database and address. */
  processEnv?: Record<string, string>;
  /** Options of the in-process workers, beyond the database and address. */
  workerOptions?: Partial<WorkerOptions>;
}

/**
 * Workers a test starts and kills itself, on the file's own database: in-process ones
 * (`start`) and `node apps/worker/dist/main.js` processes (`spawnProcess`), as in
 * production. Everything still running is stopped after each test.
 */
export function useWorkerFleet(api: TestApi, options: WorkerFleetOptions) {
  const running = new Set<RunningWorker>();
  const children = new Set<ChildProcess>();
  let childErrors = "";

  beforeAll(() => {
    if (!existsSync(workerMain)) throw new Error(`${workerMain} is missing: run pnpm turbo run build first`);
  });

  afterEach(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    children.clear();
    await Promise.all([...running].map((worker) => worker.stop()));
    running.clear();
  });

  const publicBaseUrl = () => api.baseUrl.replace(/\/v1$/, "");

  return {
    /** What the spawned workers wrote on stderr: shown when a test about them fails. */
    errors: () => childErrors,

    async start(workerOptions: Partial<WorkerOptions> = {}): Promise<RunningWorker> {
      const worker = await startWorker({
        connectionString: api.databaseUrl,
        logger: pino({ level: "silent" }),
        publicBaseUrl: publicBaseUrl(),
        relayPollMs: 10,
        heartbeatIntervalMs: 200,
        heartbeatTimeoutMs: options.heartbeatTimeoutMs,
        ...options.workerOptions,
        ...workerOptions,
      });
      running.add(worker);
      return worker;
    },

    async stop(worker: RunningWorker) {
      running.delete(worker);
      await worker.stop();
    },

    spawnProcess(): ChildProcess {
      const child = spawn("node", [workerMain], {
        env: {
          ...process.env,
          DATABASE_URL: api.databaseUrl,
          PUBLIC_BASE_URL: publicBaseUrl(),
          WORKER_HEARTBEAT_TIMEOUT_MS: String(options.heartbeatTimeoutMs),
          LOG_LEVEL: "silent",
          ...options.processEnv,
        },
        stdio: ["ignore", "ignore", "pipe"],
      });
      child.stderr?.on("data", (chunk) => {
        childErrors += chunk;
      });
      children.add(child);
      return child;
    },

    async kill(child: ChildProcess) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
    },
  };
}
