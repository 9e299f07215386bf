import type { TestProject } from "vitest/node";
import { startTestDatabase } from "./test-database.js";

declare module "vitest" {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

/**
 * The vitest global setup of every package whose tests need the database (not part of
 * the package's runtime exports). One real PostgreSQL for the whole run: `DATABASE_URL` when set, otherwise an embedded
 * one in a temporary directory. Tests isolate themselves by creating their own organizations.
 */
export default async function setup(project: TestProject) {
  const database = await startTestDatabase();
  project.provide("databaseUrl", database.url);
  return () => database.stop();
}
