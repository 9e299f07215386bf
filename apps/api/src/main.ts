import { boundHeapGrowth, listenFailure, loggableError, runStartup, stopOnSignals } from "@parley/core";
import { createDatabaseClient } from "@parley/db";
import { startTracing } from "@parley/tracing";
import { startWorker, workerOptionsFrom } from "@parley/worker";
import { pino } from "pino";
import { Registry } from "prom-client";
import { loadConfigs } from "./config.js";
import { openDatabase } from "./database.js";
import { createDemoOrganizationIfEmpty, demoBanner } from "./demo.js";
import { type RunningApi, startApi } from "./server.js";

/**
 * `pnpm start`: database, migrations, demo organization, API and worker in one process. A
 * start that cannot work says why in one line and leaves nothing running (runStartup).
 */
boundHeapGrowth();

await runStartup(async (onFailure) => {
  const { config, workerConfig } = loadConfigs();
  const logger = pino({
    level: config.LOG_LEVEL,
    redact: ["req.headers.authorization"],
    serializers: { err: loggableError },
  });
  // Loads the OpenTelemetry SDK only when an OTLP endpoint is configured (the worker in
  // this process shares it, under the API's service name).
  const tracing = await startTracing(config, { defaultServiceName: "parley-api" });
  if (tracing) logger.info({ service: tracing.serviceName }, "tracing on (OTLP)");

  const database = await openDatabase(config, (line) => logger.debug({ component: "postgres" }, line));
  onFailure(() => database.stop());
  logger.info({ embedded: database.embedded }, "database ready");

  // SIGINT and SIGTERM shut down gracefully (stopOnSignals), the embedded server included;
  // installed before the worker starts, as its runner takes jobs before the API listens.
  // The start's last step (the demo organization) runs after "listening": a signal in the
  // meantime waits for it, since stopping the database under its statement made that step,
  // and so the whole start, fail with exit code 1 after a clean shutdown.
  let lastStep: Promise<unknown> | undefined;
  async function shutdown(running: RunningApi, signal: string) {
    logger.info({ signal }, "shutting down");
    if (lastStep) {
      logger.info("waiting for the start's last step (the demo organization) before stopping");
      await lastStep.catch(() => {});
    }
    await running.close();
    await worker?.stop();
    await tracing?.shutdown((error) => logger.warn({ err: error }, "the last spans could not be exported"));
    await database.stop();
    process.exit(0);
  }
  const startedApi = stopOnSignals<RunningApi>((running, signal) => {
    shutdown(running, signal).catch((error: unknown) => {
      logger.error({ err: error }, "the shutdown failed");
      process.exit(1);
    });
  });

  // One registry for the process: its one `/metrics` serves the API's and the worker's families.
  const metricsRegistry = new Registry();
  const worker = workerConfig
    ? await startWorker({
        connectionString: database.url,
        metricsRegistry,
        logger,
        publicBaseUrl: config.PUBLIC_BASE_URL ?? `http://localhost:${config.PORT}`,
        ...workerOptionsFrom(workerConfig),
        openPoolsAtStart: true,
      })
    : undefined;
  if (worker) onFailure(() => worker.stop());
  // In one process the API wakes the relays right after a write commits; without a worker
  // in the process, startApi wakes the workers of other processes with a NOTIFY instead.
  const api = await startApi(
    database.url,
    config,
    logger,
    worker
      ? { onChangeCommitted: () => worker.wake(), metricsRegistry, openPoolAtStart: true }
      : { metricsRegistry, openPoolAtStart: true },
  ).catch((error: unknown) => {
    throw listenFailure(error, { variable: "PORT", port: config.PORT, hostVariable: "HOST", host: config.HOST });
  });
  // Stopped before it was told: nothing more to start.
  if (startedApi(api)) return;

  logger.info({ url: api.url, worker: Boolean(worker) }, "Parley is listening");
  // Only once everything has started (a start that fails leaves no organization whose keys
  // were never shown), and never in production, where stdout is a log and a full-scope live
  // key printed there is a leaked key.
  if (config.NODE_ENV === "production") {
    logger.info("production: no demo organization; create organizations with `pnpm admin create-org`");
  } else {
    lastStep = printDemoOrganization(database.url, api.url);
    await lastStep;
    lastStep = undefined;
  }
});

async function printDemoOrganization(databaseUrl: string, apiUrl: string): Promise<void> {
  const setup = createDatabaseClient(databaseUrl, { max: 1 });
  const demo = await createDemoOrganizationIfEmpty(setup.db).finally(() => setup.close());
  if (demo) process.stdout.write(`${demoBanner(demo, apiUrl)}\n`);
}
