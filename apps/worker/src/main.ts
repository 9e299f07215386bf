import { pino } from "pino";
import { startWorker } from "./index.js";

/** The worker alone, for production: `DATABASE_URL=... node apps/worker/dist/main.js`. */
const connectionString = process.env.DATABASE_URL;
const logger = pino({ level: process.env.LOG_LEVEL ?? "info" });
if (!connectionString) {
  logger.fatal("DATABASE_URL is required to run the worker on its own");
  process.exit(1);
}
const worker = await startWorker({ connectionString, logger });
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    logger.info({ signal }, "stopping worker");
    void worker.stop().then(() => process.exit(0));
  });
}
