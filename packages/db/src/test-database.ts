import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { startEmbeddedDatabase } from "./embedded.js";
import { runMigrations } from "./migrate.js";

/**
 * A migrated PostgreSQL for a test run: `DATABASE_URL` when set, otherwise an embedded
 * server in a temporary directory that `stop()` removes.
 */
export async function startTestDatabase(): Promise<{ url: string; stop(): Promise<void> }> {
  const external = process.env.DATABASE_URL;
  if (external) {
    await runMigrations(external);
    return { url: external, stop: async () => {} };
  }
  const dataDir = await mkdtemp(path.join(tmpdir(), "parley-test-"));
  // Two test files at a time share the server, each with its API, workers and processes
  // (one behind PgBouncer holds 45 connections): PostgreSQL's default of 100 would refuse
  // a start, or leave PgBouncer's clients queued, when two such files meet.
  const database = await startEmbeddedDatabase(dataDir, { settings: { max_connections: "400" } });
  await runMigrations(database.url);
  return {
    url: database.url,
    stop: async () => {
      await database.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
