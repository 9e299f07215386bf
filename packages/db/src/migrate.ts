import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import type { Queryable } from "./client.js";

/** The committed drizzle-kit migrations, beside the built package and the sources alike. */
export const migrationsFolder = fileURLToPath(new URL("../drizzle", import.meta.url));

// Any constant works; it only has to be the same in every process.
const MIGRATION_LOCK_ID = 7_241_019;

/** Applies pending migrations; several processes starting at once apply them once. */
export async function runMigrations(url: string): Promise<void> {
  const client = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await client`select pg_advisory_lock(${MIGRATION_LOCK_ID})`;
    await migrate(drizzle(client), { migrationsFolder });
    await client`select pg_advisory_unlock(${MIGRATION_LOCK_ID})`;
  } finally {
    await client.end({ timeout: 5 });
  }
}

/** The `when` of the newest migration of packages/db/drizzle's journal (drizzle's `created_at` of it once applied). */
export function latestMigrationMillis(): number {
  const journal = JSON.parse(readFileSync(path.join(migrationsFolder, "meta", "_journal.json"), "utf8")) as {
    entries: { when: number }[];
  };
  return Math.max(...journal.entries.map((entry) => entry.when));
}

/**
 * Whether the database has applied every migration of the journal, in one cheap query
 * (drizzle records each applied migration with the journal's `when` as `created_at`). A
 * database never migrated has no `drizzle.__drizzle_migrations`: nothing applied.
 */
export async function migrationsApplied(db: Queryable, latestMillis: number): Promise<boolean> {
  const rows = await db
    .execute<{ latest: string | null }>(
      sql`select (select max(created_at) from drizzle.__drizzle_migrations)::text as latest`,
    )
    .catch((error: unknown) => {
      if (typeof error === "object" && error !== null && "code" in error && error.code === "42P01") return [];
      throw error;
    });
  const latest = rows[0]?.latest;
  return latest != null && Number(latest) >= latestMillis;
}
