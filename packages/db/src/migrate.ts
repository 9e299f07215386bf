import { fileURLToPath } from "node:url";
import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";

/** The committed drizzle-kit migrations, beside the built package and the sources alike. */
export const migrationsFolder = fileURLToPath(new URL("../drizzle", import.meta.url));

// Any constant works; it only has to be the same in every process.
const MIGRATION_LOCK_ID = 7_241_019;

/** Applies pending migrations; several processes starting at once apply them once. */
export async function runMigrations(url: string): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql`select pg_advisory_lock(${MIGRATION_LOCK_ID})`;
    await migrate(drizzle(sql), { migrationsFolder });
    await sql`select pg_advisory_unlock(${MIGRATION_LOCK_ID})`;
  } finally {
    await sql.end({ timeout: 5 });
  }
}
