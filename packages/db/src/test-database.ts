import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { startEmbeddedDatabase } from "./embedded.js";
import { runMigrations } from "./migrate.js";

/**
 * The test run's own server never goes down while the run needs it, and its data is thrown
 * away after: it need not wait for the disk at every commit. Beside CI's other suites
 * (package installs writing thousands of files), each commit's flush waited on theirs.
 * The tests of crashes and restarts run servers of their own, with the usual settings.
 */
const TEST_RUN_SETTINGS = ["fsync=off", "synchronous_commit=off", "full_page_writes=off"];

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
  const database = await startEmbeddedDatabase(dataDir, { settings: TEST_RUN_SETTINGS });
  await runMigrations(database.url);
  return {
    url: database.url,
    stop: async () => {
      await database.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
