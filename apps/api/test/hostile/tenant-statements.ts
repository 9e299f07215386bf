import * as db from "@parley/db";
import { is } from "drizzle-orm";
import { getTableConfig, PgTable } from "drizzle-orm/pg-core";

/** Every table of the drizzle schema (packages/db/src/tables), with its configuration. */
export const schemaTables = (Object.values(db) as unknown[])
  .filter((value): value is PgTable => is(value, PgTable))
  .map((table) => getTableConfig(table));

/** The tenant tables: those carrying `organization_id`, the key a Citus distribution would use. */
export const tenantTables = new Set(
  schemaTables
    .filter((table) => table.columns.some((column) => column.name === "organization_id"))
    .map((table) => table.name),
);

/** The statement as one lower-case line without identifier quotes, for matching. */
export function normalizeStatement(statement: string): string {
  return statement.replaceAll('"', "").replace(/\s+/g, " ").trim().toLowerCase();
}

/**
 * The tenant tables a statement reads or changes without naming an organization: an
 * insert must give `organization_id`, any other statement that reads, updates or deletes
 * a tenant table must compare `organization_id` with a value (`=`, `= any`, `in`), which is
 * what lets a distributed database route it to one organization's shard. A heuristic over
 * the SQL text (a statement mentioning the filter anywhere passes), strict enough that a
 * query written without `inTenant` or an organization filter fails.
 */
export function unfilteredTenantTables(statement: string): string[] {
  const text = normalizeStatement(statement);
  const inserted = /^insert into ([a-z_]+)/.exec(text)?.[1];
  if (inserted) {
    if (!tenantTables.has(inserted)) return [];
    return /\borganization_id\b/.test(text) ? [] : [inserted];
  }
  const touched = [...text.matchAll(/\b(?:from|join|update|delete from|using)\s+([a-z_]+)/g)]
    .map((match) => match[1] ?? "")
    .filter((table) => tenantTables.has(table));
  if (touched.length === 0) return [];
  const filtered = /\borganization_id\s*(=|in\b)/.test(text);
  return filtered ? [] : [...new Set(touched)];
}

/**
 * What a statement does, without its values and column lists: its verb, the tenant tables
 * it touches unfiltered and the columns it compares with values (`update contacts by id`).
 */
export function statementShape(statement: string): string {
  const text = normalizeStatement(statement);
  const verb = /^with\b/.test(text) ? "with" : (/^[a-z]+/.exec(text)?.[0] ?? "");
  const compared = [...text.matchAll(/\b(?:[a-z_]+\.)?([a-z_]+)\s*(?:=|in)\s*(?:\(\s*)?\$\d+/g)].map(
    (match) => match[1] ?? "",
  );
  return `${verb} ${unfilteredTenantTables(statement).join("+")} by ${[...new Set(compared)].sort().join(",")}`;
}

/**
 * The statements of the API's operations that still reach tenant rows by a key other than
 * the organization: the key lookup (the organization is what it finds), and the webhook
 * endpoints' and deliveries' statements, which follow a lookup of the endpoint with
 * `inTenant` in the same transaction and then change it or read its deliveries by id.
 * Correct on one PostgreSQL; under Citus each would be a multi-shard statement until it
 * also names the organization (docs/operations.md, "Sharding on paper"). A new statement
 * without the filter fails the test; fixing one of these removes it from here.
 */
export const KNOWN_UNFILTERED_SHAPES = new Set([
  // Authentication: the key's hash is all a request brings; the organization is what it finds.
  // Under Citus, api_keys is a reference table (or a lookup table by hash).
  "select api_keys by secret_hash",
  "select webhook_deliveries by endpoint_id,event_id",
  "select webhook_deliveries by endpoint_id,id",
  "select webhook_deliveries by endpoint_id",
  "with webhook_endpoints by id",
  "select webhook_endpoints+events by id",
  "delete webhook_endpoints by id",
  "update webhook_endpoints by id,previous_secret,previous_secret_expires_at,secret,updated_at",
  "update webhook_endpoints by description,enabled,id,updated_at,url",
]);
