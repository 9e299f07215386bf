import path from "node:path";
import { runMigrations, startEmbeddedDatabase } from "@parley/db";
import type { Config } from "./config.js";

export interface OpenedDatabase {
  url: string;
  embedded: boolean;
  stop(): Promise<void>;
}

/** `DATABASE_URL` when set; otherwise the embedded PostgreSQL under `DATA_DIR`. Migrated either way. */
export async function openDatabase(config: Config, log: (line: string) => void = () => {}): Promise<OpenedDatabase> {
  if (config.DATABASE_URL) {
    await runMigrations(config.DATABASE_URL);
    return { url: config.DATABASE_URL, embedded: false, stop: async () => {} };
  }
  const embedded = await startEmbeddedDatabase(path.resolve(config.DATA_DIR), log);
  await runMigrations(embedded.url);
  return { url: embedded.url, embedded: true, stop: embedded.stop };
}
