import { operations } from "@parley/schema";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { schemaTables, tenantTables } from "./hostile/tenant-statements.js";

/**
 * Issue 25, sharding on paper: the schema could be distributed with Citus by
 * `organization_id` (docs/operations.md, "Sharding on paper"). Every tenant table carries
 * the column; the tables without it are listed with the reason; every resource of the
 * catalogue lives in a tenant table; and the unique constraints that do not include
 * `organization_id` (which a distributed table cannot keep as they are) are the known ones.
 * That every statement filters on it is checked in hostile/tenant-isolation.test.ts, over
 * every operation of the catalogue.
 */

/** Tables without `organization_id`, and why. */
const NOT_TENANT_TABLES: Record<string, string> = {
  organizations: "the tenant itself: distributed by its own id, colocated with the rest",
  attachment_contents:
    "the bytes of an attachment, reached by its id only (a 1:1 child of attachments); under Citus it takes organization_id or the bytes move to S3 (ATTACHMENTS_S3_BUCKET)",
  message_outbox: "a transient queue of message ids the relay drains within milliseconds; the job queue's side",
  event_outbox: "a transient queue of event ids the relay drains within milliseconds; the job queue's side",
  instance_secrets: "the installation's own secrets, the same for every organization: a reference table",
  worker_heartbeats: "the liveness of worker processes, not of any organization: a local table of the coordinator",
};

/** The path parameter of each resource of the catalogue, and the table holding it. */
const TABLE_OF_RESOURCE: Record<string, string> = {
  contact_id: "contacts",
  conversation_id: "conversations",
  message_id: "messages",
  note_id: "notes",
  tag_id: "tags",
  custom_field_id: "custom_fields",
  team_id: "teams",
  user_id: "users",
  channel_id: "channels",
  webhook_id: "webhook_endpoints",
  delivery_id: "webhook_deliveries",
  event_id: "events",
  attachment_id: "attachments",
};

/**
 * Unique constraints of tenant tables without `organization_id`. Citus requires a distributed
 * table's unique constraints to include the distribution column: the primary keys on `id`
 * become `(organization_id, id)` (ids are globally unique ULIDs, so nothing changes in
 * meaning); the rest are global by design and move to reference tables.
 */
const GLOBAL_UNIQUE: Record<string, string> = {
  "api_keys (secret_hash)": "a request brings only its key: the hash is looked up before the organization is known",
  "channels (provider_account, type)":
    "one WhatsApp number, Page, Instagram account or inbound address is connected once, across organizations; Meta webhooks and SMTP find the channel by it",
  "webchat_sessions (token_hash)": "a visitor brings only its token",
  "contact_tags (contact_id, tag_id)":
    "a link of two rows of one organization: becomes (organization_id, contact_id, tag_id)",
  "team_members (team_id, user_id)":
    "a link of two rows of one organization: becomes (organization_id, team_id, user_id)",
  "note_deletions (note_id)": "keyed by the deleted note's id: becomes (organization_id, note_id)",
};

function uniqueConstraints(table: (typeof schemaTables)[number]): string[][] {
  const primary = table.columns.filter((column) => column.primary).map((column) => column.name);
  return [
    ...(primary.length > 0 ? [primary] : []),
    ...table.primaryKeys.map((key) => key.columns.map((column) => column.name)),
    ...table.indexes
      .filter((index) => index.config.unique)
      .map((index) =>
        index.config.columns.map((column) => ("name" in column && column.name ? column.name : "(expression)")),
      ),
  ];
}

describe("the schema, distributable by organization_id", () => {
  it("carries organization_id in every table but the listed ones", () => {
    const without = schemaTables.filter((table) => !tenantTables.has(table.name)).map((table) => table.name);
    expect(without.sort()).toEqual(Object.keys(NOT_TENANT_TABLES).sort());
    for (const table of schemaTables.filter((each) => tenantTables.has(each.name))) {
      const column = table.columns.find((each) => each.name === "organization_id");
      expect(column?.notNull, `${table.name}.organization_id is not null`).toBe(true);
    }
  });

  it("keeps every resource of the catalogue in a tenant table", () => {
    const params = new Set(
      operations.flatMap((operation) => [...operation.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] ?? "")),
    );
    expect([...params].sort()).toEqual(Object.keys(TABLE_OF_RESOURCE).sort());
    for (const [param, table] of Object.entries(TABLE_OF_RESOURCE)) {
      expect(tenantTables.has(table), `${param}: ${table}`).toBe(true);
    }
  });

  it("has no unique constraint without organization_id but the primary keys on id and the listed ones", () => {
    const found: string[] = [];
    for (const table of schemaTables.filter((each) => tenantTables.has(each.name))) {
      for (const columns of uniqueConstraints(table)) {
        if (columns.includes("organization_id")) continue;
        if (columns.length === 1 && columns[0] === "id") continue;
        found.push(`${table.name} (${columns.join(", ")})`);
      }
    }
    expect(found.sort()).toEqual(Object.keys(GLOBAL_UNIQUE).sort());
  });
});

describe("the migrated database", () => {
  let sql: postgres.Sql;
  beforeAll(() => {
    sql = postgres(inject("databaseUrl"), { max: 1, onnotice: () => {} });
  });
  afterAll(() => sql.end({ timeout: 5 }));

  it("holds no table the schema above does not describe, but the job queue's", async () => {
    const rows = await sql<{ schema: string; name: string }[]>`
      select table_schema as schema, table_name as name from information_schema.tables
      where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`;
    const described = new Set(schemaTables.map((table) => table.name));
    const others = rows
      .filter((row) => !(row.schema === "public" && described.has(row.name)))
      .map((row) => `${row.schema}.${row.name}`);
    // graphile-worker's own tables (the job queue: see docs/operations.md), once a worker ran
    // on this database, and drizzle's migration journal.
    expect(others.filter((name) => !name.startsWith("graphile_worker.")).sort()).toEqual([
      "drizzle.__drizzle_migrations",
    ]);
  });
});
