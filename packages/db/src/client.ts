import { drizzle, type PostgresJsDatabase } from "drizzle-orm/postgres-js";
import postgres from "postgres";

// Without a schema: drizzle builds a relational query builder per table for every
// transaction it opens when given one, and no code here uses relational queries.
export type Database = PostgresJsDatabase;
/** A database handle or an open transaction: queries accept either. */
export type Queryable = Database | Parameters<Parameters<Database["transaction"]>[0]>[0];

export interface DatabaseClient {
  db: Database;
  sql: postgres.Sql;
  /** The pool's use now (metrics): see countingPoolUse. */
  pool(): PoolUsage;
  /**
   * Opens every connection of the pool now; postgres.js opens one only when a statement finds
   * the others busy. A process's start calls it (`openPoolAtStart`), HikariCP's fixed-size
   * pool: its first requests find the connections ready rather than each paying a new
   * PostgreSQL backend, and a database that cannot hold them all refuses the start
   * (`too many clients`, see startupFailureLine) rather than a request under load.
   */
  open(): Promise<void>;
  close(): Promise<void>;
}

export interface PoolUsage {
  /** Connections holding a query or a transaction. */
  inUse: number;
  /** Queries and transactions beyond the pool's connections: queued, or pipelined behind another query. */
  waiting: number;
  /** The most connections the pool opens. */
  max: number;
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

type QueryThen = PromiseLike<unknown>["then"];

/** The queries of the counting pools not yet run, each with what to do when it runs (see countingPoolUse). */
const queryStarts = new WeakMap<object, (query: PromiseLike<unknown>, then: QueryThen) => void>();
let queryStartsObserved = false;

/**
 * Awaiting a postgres.js query is what runs it: the `then` of its class is wrapped, once
 * per process, to tell the pool that made a query when it first runs. On the class, never
 * on a query: a `then` defined on a promise object makes V8 give up its fast path for
 * every promise of the process (the "promise then" protector), which cost a few percent of
 * a request's CPU.
 */
function observeQueryStarts(query: object): void {
  if (queryStartsObserved) return;
  const prototype = Object.getPrototypeOf(query) as { then: QueryThen } | null;
  if (!prototype || prototype === Promise.prototype) return;
  queryStartsObserved = true;
  const then = prototype.then;
  // biome-ignore lint/suspicious/noThenProperty: the class's own then, wrapped; its queries stay the thenables they were.
  prototype.then = function (this: PromiseLike<unknown>, ...args: Parameters<QueryThen>) {
    const start = queryStarts.get(this);
    if (start) {
      queryStarts.delete(this);
      start(this, then);
    }
    return then.apply(this, args);
  } as QueryThen;
}

/**
 * postgres.js keeps its pool's state to itself, so the pool's use is counted here, where
 * every query and transaction of this process starts: a statement (a tagged template or
 * `unsafe`, drizzle's path) counts from its execution until it settles, a transaction
 * (`begin`, `reserve`) for as long as it holds its connection; the statements inside a
 * transaction are not counted again. postgres.js gives each of them a connection of its own
 * while one is free, so those in flight up to `max` are connections in use, and the rest
 * wait (queued, or pipelined behind another statement). `listen` has a connection of its
 * own, outside the pool, and is not counted; neither is a cursor.
 */
function countingPoolUse(sql: postgres.Sql, max: number): { sql: postgres.Sql; pool(): PoolUsage } {
  let inFlight = 0;
  const settled = () => {
    inFlight -= 1;
  };
  const countQuery = <Q>(query: Q): Q => {
    if (typeof query !== "object" || query === null || !("then" in query)) return query;
    observeQueryStarts(query);
    // Awaiting a query is what runs it: counted from then, once, until it settles.
    queryStarts.set(query, (started, then) => {
      inFlight += 1;
      then.call(started, settled, settled);
    });
    return query;
  };
  const proxy = new Proxy(sql, {
    apply(target, thisArgument, args) {
      return countQuery(Reflect.apply(target, thisArgument, args));
    },
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property === "unsafe") {
        return (...args: Parameters<postgres.Sql["unsafe"]>) => countQuery(target.unsafe(...args));
      }
      if (property === "begin") {
        return (...args: unknown[]) => {
          inFlight += 1;
          return (value as (...args: unknown[]) => Promise<unknown>).apply(target, args).finally(settled);
        };
      }
      if (property === "reserve") {
        return async () => {
          const reserved = await target.reserve();
          inFlight += 1;
          const release = reserved.release.bind(reserved);
          let released = false;
          reserved.release = () => {
            if (!released) {
              released = true;
              settled();
            }
            release();
          };
          return reserved;
        };
      }
      return value;
    },
  });
  return {
    sql: proxy,
    pool: () => ({ inUse: Math.min(inFlight, max), waiting: Math.max(0, inFlight - max), max }),
  };
}

export function createDatabaseClient(
  url: string,
  options: { max?: number; prepare?: boolean; onQuery?: (query: string) => void } = {},
): DatabaseClient {
  const { onQuery } = options;
  const max = options.max ?? 10;
  const raw = postgres(url, {
    max,
    ...(options.prepare === false ? { prepare: false } : {}),
    // Tests count the statements a code path sends (the web chat streams' poller).
    ...(onQuery ? { debug: (_connection: number, query: string) => onQuery(query) } : {}),
    onnotice: () => {},
    // After a database restart, reconnect within a second rather than postgres.js's growing
    // default (up to tens of seconds), so requests recover as soon as the database does.
    backoff: (attempt: number) => Math.min(0.1 * 2 ** attempt, 1),
  });
  const { sql, pool } = countingPoolUse(raw, max);
  const db = drizzle(options.prepare === false ? sql : preparingStatements(sql));
  // As many statements at once as the pool has connections: each takes a closed one and opens it.
  const open = async () => {
    await Promise.all(Array.from({ length: max }, () => raw`select 1`));
  };
  return { db, sql, pool, open, close: () => raw.end({ timeout: 5 }) };
}
