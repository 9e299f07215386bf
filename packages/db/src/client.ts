import { drizzle, type PostgresJsDatabase } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import * as tables from "./tables/index.js";

export type Database = PostgresJsDatabase<typeof tables>;
/** A database handle or an open transaction: queries accept either. */
export type Queryable = Database | Parameters<Parameters<Database["transaction"]>[0]>[0];

export interface DatabaseClient {
  db: Database;
  sql: postgres.Sql;
  close(): Promise<void>;
}

export function createDatabaseClient(url: string, options: { max?: number } = {}): DatabaseClient {
  const sql = postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    // After a database restart, reconnect within a second rather than postgres.js's growing
    // default (up to tens of seconds), so requests recover as soon as the database does.
    backoff: (attempt: number) => Math.min(0.1 * 2 ** attempt, 1),
  });
  const db = drizzle(sql, { schema: tables });
  return { db, sql, close: () => sql.end({ timeout: 5 }) };
}
