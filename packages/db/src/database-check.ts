import postgres from "postgres";
import { runMigrations } from "./migrate.js";
import { explainDatabaseError, OLDEST_POSTGRES_MAJOR, StartupError } from "./startup-error.js";

/**
 * Connects once, refuses a server older than PostgreSQL 14, then applies pending migrations.
 * Every failure of a kind an operator can fix (refused, wrong password, missing database,
 * too old, no privilege) is a `StartupError` naming `source` (the variable the URL came from).
 */
export async function prepareDatabase(url: string, source = "DATABASE_URL"): Promise<void> {
  await checkDatabase(url, source);
  try {
    await runMigrations(url);
  } catch (error) {
    throw asStartupError(error, url, source);
  }
}

/** Reachable, authenticated, and PostgreSQL 14 or newer. */
export async function checkDatabase(url: string, source = "DATABASE_URL"): Promise<void> {
  const sql = postgres(url, { max: 1, connect_timeout: 10, onnotice: () => {} });
  try {
    const [row] = await sql<{ version: string; number: string }[]>`
      select current_setting('server_version') as version, current_setting('server_version_num') as number`;
    const major = Math.floor(Number(row?.number ?? 0) / 10_000);
    if (major < OLDEST_POSTGRES_MAJOR) {
      throw new StartupError(
        `The PostgreSQL of ${source} is version ${row?.version}; Parley needs PostgreSQL ${OLDEST_POSTGRES_MAJOR} or newer. Upgrade it, or point ${source} at a newer server.`,
      );
    }
  } catch (error) {
    throw asStartupError(error, url, source);
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

function asStartupError(error: unknown, url: string, source: string): unknown {
  if (error instanceof StartupError) return error;
  const explained = explainDatabaseError(error, url, source);
  return explained ? new StartupError(explained) : error;
}
