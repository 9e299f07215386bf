import { runMigrations, type ScratchPostgres, startScratchPostgres } from "@parley/db";
import { afterAll, beforeAll } from "vitest";

export interface OwnPostgres {
  /** The migrated `parley` database, on a port that stays the same across restarts. */
  readonly url: string;
  /** A fast shutdown (SIGINT): sessions are terminated, new connections refused until `start()`. */
  stop(): Promise<void>;
  /** Starts the server again on the same data and port; resolves once it accepts connections. */
  start(): Promise<void>;
}

/**
 * A PostgreSQL server of the test file's own, which the file may stop and start (the run's
 * shared one must never go down under other files), removed after the file.
 */
export function useOwnPostgres(): OwnPostgres {
  let scratch: ScratchPostgres | undefined;
  beforeAll(async () => {
    scratch = await startScratchPostgres();
    await runMigrations(scratch.url);
  }, 120_000);
  afterAll(async () => {
    await scratch?.destroy();
  });
  return {
    get url() {
      return scratch?.url ?? "";
    },
    async stop() {
      await scratch?.server.stop();
    },
    async start() {
      await scratch?.server.start();
    },
  };
}
