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

type UnsafeOptions = Parameters<postgres.Sql["unsafe"]>[2];
type TransactionCallback = (sql: postgres.TransactionSql) => unknown;

/**
 * drizzle runs every query it was not given a name for with `prepare: false`, and
 * postgres.js then spends two round trips on each query with parameters (describe, then
 * execute) and PostgreSQL plans it every time. As named statements, which postgres.js
 * prepares once per connection and keeps, the same queries take one round trip each.
 * This wraps the client (and every transaction and savepoint it opens) so drizzle's
 * queries are prepared. Poolers that cannot keep prepared statements (PgBouncer in
 * transaction mode before 1.21) need `prepare: false`, which also turns off postgres.js's
 * own named statements (its tagged queries): docs/operations.md, "Behind PgBouncer".
 */
function preparingStatements<T extends postgres.Sql | postgres.TransactionSql>(sql: T): T {
  return new Proxy(sql, {
    get(target, property, receiver) {
      if (property === "unsafe") {
        return (query: string, parameters?: unknown[], options?: UnsafeOptions) =>
          target.unsafe(query, parameters as postgres.ParameterOrJSON<never>[], { ...options, prepare: true });
      }
      if (property === "begin" || property === "savepoint") {
        const open = Reflect.get(target, property, receiver) as (...args: unknown[]) => Promise<unknown>;
        return (...args: unknown[]) => {
          const callback = args.pop() as TransactionCallback;
          return open(...args, (tx: postgres.TransactionSql) => callback(preparingStatements(tx)));
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });
}

export function createDatabaseClient(
  url: string,
  options: { max?: number; prepare?: boolean; onQuery?: (query: string) => void } = {},
): DatabaseClient {
  const { onQuery } = options;
  const sql = postgres(url, {
    max: options.max ?? 10,
    ...(options.prepare === false ? { prepare: false } : {}),
    // Tests count the statements a code path sends (the web chat streams' poller).
    ...(onQuery ? { debug: (_connection: number, query: string) => onQuery(query) } : {}),
    onnotice: () => {},
    // After a database restart, reconnect within a second rather than postgres.js's growing
    // default (up to tens of seconds), so requests recover as soon as the database does.
    backoff: (attempt: number) => Math.min(0.1 * 2 ** attempt, 1),
  });
  const db = drizzle(options.prepare === false ? sql : preparingStatements(sql), { schema: tables });
  return { db, sql, close: () => sql.end({ timeout: 5 }) };
}
