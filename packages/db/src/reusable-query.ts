import { type Column, getTableColumns, type InferSelectModel, type Table } from "drizzle-orm";
import type postgres from "postgres";
import type { Queryable } from "./client.js";

/** postgres.js's client, for packages that build its statements without depending on it. */
export type SqlClient = postgres.Sql;
/** A piece of a postgres.js statement, built by its tagged template. */
export type SqlFragment = postgres.Fragment;

/** What drizzle's `.prepare(name)` returns, for any kind of query. */
export interface PreparedQuery<Result> {
  execute(values?: Record<string, unknown>): Promise<Result>;
}

/**
 * The postgres.js client behind a drizzle handle: the pool's, or an open transaction's.
 * For a statement drizzle's builder cannot express (a single statement of several
 * data-modifying CTEs); postgres.js's tagged template costs next to nothing to build.
 */
export function postgresClientOf(handle: Queryable): postgres.Sql {
  const session = (handle as unknown as { _?: { session?: { client?: unknown } } })._?.session;
  if (typeof session?.client !== "function") {
    throw new Error("this handle is not a drizzle postgres.js database or transaction");
  }
  return session.client as postgres.Sql;
}

/**
 * A query built once, with placeholders, and run on any handle: the pool or an open
 * transaction. drizzle's builder spends 150 to 300 µs of CPU on every query it builds
 * (more than the round trip to PostgreSQL), and its own `.prepare()` binds the built
 * query to the handle it was prepared on. The prepared query here is built on first
 * use and then run on the connection of the handle each call gives, which a
 * transaction's statements need. For the hot paths only: other queries stay plain
 * builder calls.
 *
 * drizzle encodes a placeholder's value with its column's encoder and a timestamp's
 * fails on null: a nullable timestamp takes a raw placeholder,
 * sql`${sql.placeholder("at")}::timestamptz`, given an ISO string or null.
 */
export function reusableQuery<Values extends Record<string, unknown>, Result>(
  prepare: (handle: Queryable) => PreparedQuery<Result>,
): (handle: Queryable, values: Values) => Promise<Result> {
  let prepared: PreparedQuery<Result> | undefined;
  return (handle, values) => {
    prepared ??= prepare(handle);
    // drizzle's prepared query reads its connection from `this.client` when it runs.
    const bound: PreparedQuery<Result> = Object.create(prepared, { client: { value: postgresClientOf(handle) } });
    return bound.execute(values);
  };
}

/** What drizzle's builder gives before it runs: the statement's text and its parameters. */
export interface BuiltQuery {
  toSQL(): { sql: string; params: unknown[] };
}

/**
 * A statement's rows as postgres.js gives them with `.values()`: each row an array of its
 * column values, in the statement's column order (`columnIndex` says where each is).
 */
export interface RawRows {
  rows: unknown[][];
  columnIndex: ReadonlyMap<string, number>;
}

/**
 * A read built once with drizzle's builder (placeholders only) and run by postgres.js,
 * answered with PostgreSQL's rows as they come: timestamps as text (the client's parsers
 * leave them so for drizzle), JSON parsed, each row an array of values. For the hottest
 * reads, where drizzle's row mapping (a generic decoder looked up per column of every
 * row) was the largest share of the request's own CPU; the caller maps the columns it
 * needs. Arrays rather than postgres.js's row objects: those are built a property at a
 * time under each column's name, a store that has seen every table's columns once the
 * process has served a variety of requests (and slows for all of them), where an array
 * is filled by position.
 */
export function reusableRawQuery<Values extends object>(
  build: (handle: Queryable) => BuiltQuery,
): (handle: Queryable, values: Values) => Promise<RawRows> {
  let built: { text: string; names: string[] } | undefined;
  let columnIndex: Map<string, number> | undefined;
  return async (handle, values) => {
    built ??= placeholdersOf(build(handle));
    const parameters = built.names.map(
      (name) => (values as Record<string, unknown>)[name],
    ) as postgres.ParameterOrJSON<never>[];
    const rows = await postgresClientOf(handle).unsafe(built.text, parameters, { prepare: true }).values();
    columnIndex ??= new Map(rows.columns.map((column, index) => [column.name, index]));
    return { rows: rows as unknown as unknown[][], columnIndex };
  };
}

function placeholdersOf(query: BuiltQuery): { text: string; names: string[] } {
  const { sql, params } = query.toSQL();
  const names = params.map((param) => {
    const name = (param as { name?: unknown } | null)?.name;
    if (typeof name !== "string") throw new Error("a reusable raw query takes placeholders only");
    return name;
  });
  return { text: sql, names };
}

const columnsByTable = new WeakMap<Table, [string, Column][]>();

/**
 * A row of `table` as drizzle's builder answers it, from a postgres.js row object holding
 * the table's columns under their own names (a raw statement's `returning *`): each value
 * decoded by its column's own mapping, as drizzle decodes it (a timestamp from its text).
 */
export function tableRowOf<T extends Table>(table: T, raw: Record<string, unknown>): InferSelectModel<T> {
  let columns = columnsByTable.get(table);
  if (!columns) {
    columns = Object.entries(getTableColumns(table));
    columnsByTable.set(table, columns);
  }
  const row: Record<string, unknown> = {};
  for (const [field, column] of columns) {
    const value = raw[column.name];
    if (value === undefined) throw new Error(`the row has no column ${column.name}`);
    row[field] = value === null ? null : column.mapFromDriverValue(value);
  }
  return row as InferSelectModel<T>;
}
