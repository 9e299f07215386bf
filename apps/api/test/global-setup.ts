import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { runMigrations, startEmbeddedDatabase } from "@parley/db";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

/**
 * One real PostgreSQL for the whole run: `DATABASE_URL` when set, otherwise an embedded
 * one in a temporary directory. Tests isolate themselves by creating their own organizations.
 */
export default async function setup(project: TestProject) {
  const external = process.env.DATABASE_URL;
  if (external) {
    await runMigrations(external);
    project.provide("databaseUrl", external);
    return;
  }
  const dataDir = await mkdtemp(path.join(tmpdir(), "parley-test-"));
  const database = await startEmbeddedDatabase(dataDir);
  await runMigrations(database.url);
  project.provide("databaseUrl", database.url);
  return async () => {
    await database.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
}
