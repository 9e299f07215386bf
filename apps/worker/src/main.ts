import { boundHeapGrowth, loggableError, runStartup, stopOnSignals } from "@parley/core";
import { checkDatabase, StartupError } from "@parley/db";
import { startTracing } from "@parley/tracing";
import { pino } from "pino";
import { loadWorkerConfig, workerOptionsFrom } from "./config.js";
import { type RunningWorker, startWorker } from "./index.js";

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
  // The graceful stop (stopOnSignals) is installed before the start: the runner takes jobs
  // before startWorker returns (the start's last steps, the outbox's LISTEN and the metrics
  // server, come after it), so a signal in between waits for the start, then stops the worker.
  const startedWorker = stopOnSignals<RunningWorker>((running, signal) => {
    logger.info({ signal }, "stopping worker");
    void running
      .stop()
      .then(() => tracing?.shutdown((error) => logger.warn({ err: error }, "the last spans could not be exported")))
      .then(() => process.exit(0));
  });
  const started = await startWorker({
    connectionString: config.DATABASE_URL,
    logger,
    publicBaseUrl: config.PUBLIC_BASE_URL ?? "http://localhost:3000",
    ...workerOptionsFrom(config),
    openPoolsAtStart: true,
  });
  onFailure(() => started.stop());
  startedWorker(started);
});
