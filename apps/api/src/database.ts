import path from "node:path";
import { prepareDatabase, startEmbeddedDatabase } from "@parley/db";
import type { Config } from "./config.js";

export interface OpenedDatabase {
  url: string;
  embedded: boolean;
  stop(): Promise<void>;
}

/**
 * `DATABASE_URL` when set; otherwise the embedded PostgreSQL under `DATA_DIR`. Checked
 * (reachable, PostgreSQL 14+) and migrated either way; what an operator can fix fails as a
 * one-line `StartupError`, and an embedded server this call started is stopped again.
 */
export async function openDatabase(config: Config, log: (line: string) => void = () => {}): Promise<OpenedDatabase> {
  if (config.DATABASE_URL) {
    // Migrations hold a session-level advisory lock: not through a transaction pooler.
    if (config.DATABASE_DIRECT_URL) await prepareDatabase(config.DATABASE_DIRECT_URL, "DATABASE_DIRECT_URL");
    else await prepareDatabase(config.DATABASE_URL, "DATABASE_URL");
    return { url: config.DATABASE_URL, embedded: false, stop: async () => {} };
  }
  const embedded = await startEmbeddedDatabase(path.resolve(config.DATA_DIR), {
    log,
    binDir: config.EMBEDDED_POSTGRES_BIN_DIR,
  });
  try {
    await prepareDatabase(embedded.url, "the embedded PostgreSQL");
  } catch (error) {
    await embedded.stop();
    throw error;
  }
  return { url: embedded.url, embedded: true, stop: embedded.stop };
}
