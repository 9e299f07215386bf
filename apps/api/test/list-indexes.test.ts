import { lastInboundAts } from "@parley/core";
import { explainGenericPlan, messages, type PlanNode, planOfExplained, postgresClientOf, scansOf } from "@parley/db";
import { eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { afterPlaceholderPosition } from "../src/http/pagination.js";
import { selectMessagePage, selectMessagePageOfDirection, selectMessagePageVersions } from "../src/messages/queries.js";
import { sendableConversation, testClient } from "./delivery-helpers.js";
import { conversationWithMessages, useTestApi } from "./harness.js";

const api = useTestApi();

/**
 * Lists are read newest first (`created_at desc, id desc`). Their index must hold that
 * order, NULLS placement included, or PostgreSQL reads and sorts the whole list to
 * serve the first page (a conversation of a million messages took a second).
 */
const lists = [
  ["messages", "conversation_id = 'conv_x'"],
  ["notes", "conversation_id = 'conv_x'"],
  ["contacts", "organization_id = 'org_x' and environment = 'test'"],
  ["conversations", "organization_id = 'org_x' and environment = 'test'"],
  ["tags", "organization_id = 'org_x' and environment = 'test'"],
  ["events", "organization_id = 'org_x' and environment = 'test'"],
  ["webhook_endpoints", "organization_id = 'org_x' and environment = 'test'"],
  ["webhook_deliveries", "endpoint_id = 'wh_x'"],
] as const;

function planNodes(plan: PlanNode): string[] {
  return [String(plan["Node Type"]), ...(plan.Plans ?? []).flatMap(planNodes)];
}

function indexNames(plan: PlanNode): string[] {
  return scansOf(plan).flatMap((scan) => (scan.index ? [scan.index] : []));
}

/** The plan of a query, with sorting and sequential scans made as costly as on a long table. */
async function planOf(query: string): Promise<PlanNode> {
  return api.client.sql.begin(async (sql) => {
    await sql`set local enable_sort = off`;
    await sql`set local enable_seqscan = off`;
    const [row] = await sql.unsafe(`explain (format json) ${query}`);
    return planOfExplained(row);
  });
}

describe("list indexes", () => {
  it.each(lists)("%s: the first page comes from the index, without sorting", async (table, where) => {
    const plan = await planOf(`select * from ${table} where ${where} order by created_at desc, id desc limit 26`);
    const nodes = planNodes(plan);
    expect(nodes).not.toContain("Sort");
    expect(nodes.some((node) => node.includes("Index"))).toBe(true);
  });

  // Every delivery on a channel with a session window reads where the window starts. Read
  // by messages_conversation_idx it would step over every outbound message sent since
  // the customer last wrote.
  it("the newest inbound message of a conversation comes from its own index, without sorting", async () => {
    const plan = await planOf(
      "select created_at from messages where conversation_id = 'conv_x' and direction = 'inbound' order by created_at desc nulls first, id limit 1",
    );
    expect(planNodes(plan)).not.toContain("Sort");
    expect(indexNames(plan)).toEqual(["messages_inbound_idx"]);
  });
});

describe("partial indexes of messages", () => {
  // Only messages with an attachment or a provider id are in these indexes (migration
  // 0021): a look-up by either column must still find them there, on a generic plan too.
  it.each([
    ["attachment_id", "messages_attachment_idx"],
    ["provider_message_id", "messages_provider_id_idx"],
  ])("a look-up by %s uses %s", async (column, index) => {
    const plan = await api.client.sql.begin(async (sql) => {
      await sql`set local enable_seqscan = off`;
      return explainGenericPlan(sql, `select id from messages where ${column} = $1`, ["none"]);
    });
    expect(indexNames(plan)).toEqual([index]);
  });
});

/** Rows read from `table` by the plan's scans, as EXPLAIN ANALYZE counted them. */
function rowsReadFrom(plan: PlanNode, table: string): number {
  return scansOf(plan)
    .filter((scan) => scan.relation === table)
    .reduce((sum, scan) => sum + scan.rows, 0);
}

/** A page query's generic plan, run with `values` for its placeholders (then rolled back). */
async function genericPlanOf(query: { sql: string; params: unknown[] }, values: Record<string, unknown>) {
  const parameters = query.params.map((param) => values[(param as { name: string }).name]);
  return api.client.sql.begin((sql) => explainGenericPlan(sql, query.sql, parameters));
}

describe("a conversation's page on stale statistics", () => {
  // The statistics of a conversation that grew since the last ANALYZE say it is small:
  // a page read in one step was then planned as a sort of the whole conversation.
  it("reads no more rows than the page's, first page and next, before and after ANALYZE", async () => {
    const { org, conversationId } = await conversationWithMessages(api, 2000, () => api.client.sql`analyze messages`);

    const values = { organizationId: org.id, environment: "test", conversationId, limit: 26 };
    const after = { afterCreatedAt: new Date(Date.now() - 1000_000).toISOString(), afterId: "msg_" };
    const readsOnePage = async () => {
      const first = await genericPlanOf(selectMessagePage(api.client.db).toSQL(), values);
      expect(rowsReadFrom(first, "messages")).toBeLessThanOrEqual(2 * 26);
      const next = selectMessagePage(api.client.db, afterPlaceholderPosition(messages)).toSQL();
      expect(rowsReadFrom(await genericPlanOf(next, { ...values, ...after }), "messages")).toBeLessThanOrEqual(2 * 26);
      // The same pages' versions only (a page read again from its kept texts): the same plan.
      const versions = await genericPlanOf(selectMessagePageVersions(api.client.db).toSQL(), values);
      expect(rowsReadFrom(versions, "messages")).toBeLessThanOrEqual(2 * 26);
      const nextVersions = selectMessagePageVersions(api.client.db, afterPlaceholderPosition(messages)).toSQL();
      expect(rowsReadFrom(await genericPlanOf(nextVersions, { ...values, ...after }), "messages")).toBeLessThanOrEqual(
        2 * 26,
      );
      // A filtered page: its filter is checked on the conversation's messages in order,
      // never by sorting the whole conversation (every message here is outbound).
      const filtered = selectMessagePageOfDirection(api.client.db, sql.placeholder("direction")).toSQL();
      const outbound = { ...values, direction: "outbound" };
      expect(rowsReadFrom(await genericPlanOf(filtered, outbound), "messages")).toBeLessThanOrEqual(2 * 26);
    };
    await readsOnePage();
    // And once the statistics know the conversation: the generic plan does not know the limit.
    await api.client.sql`analyze messages`;
    await readsOnePage();
  });
});

describe("a delivery batch's session windows on stale statistics", () => {
  // Every delivery batch on WhatsApp, Messenger or Instagram reads where each message's
  // session window starts. With statistics that took the conversations for few, the
  // batch's messages were read from the conversation's index: every message of a busy
  // conversation, for every batch.
  it("reads the batch's messages by key, not the conversation's, before and after ANALYZE", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "whatsapp");
    await api.client.sql`analyze messages`;
    await api.client.sql`analyze conversations`;
    const [tenant] = await api.client.sql<{ organization_id: string; environment: string }[]>`
      select organization_id, environment from conversations where id = ${conversation.id}`;
    if (!tenant) throw new Error("the conversation was not stored");
    await api.client.sql`
      insert into messages (id, organization_id, environment, conversation_id, direction, type, text, status, created_at, updated_at)
      select 'msg_W' || lpad(i::text, 25, '0'), ${tenant.organization_id}, ${tenant.environment}, ${conversation.id},
             'outbound', 'text', 'x', 'queued', now() + make_interval(secs => i), now()
      from generate_series(1, 2000) as i`;
    const batch = Array.from({ length: 40 }, (_, i) => `msg_W${String(1000 + i).padStart(25, "0")}`);

    const readsTheBatchOnly = async () => {
      const { windows, conversationIndexReads } = await api.client.db.transaction(async (tx) => {
        const sql = postgresClientOf(tx);
        // The statistics of a new database, a conversation or two and no ANALYZE of the
        // messages yet (rolled back with the transaction): the planner then takes joining
        // into a conversation as cheap.
        await sql`update pg_class set reltuples = 1, relpages = 1 where oid = 'conversations'::regclass`;
        await sql`delete from pg_statistic where starelid = 'messages'::regclass`;
        // Index entries this backend read, not yet reported: counted around the statement.
        const readSoFar = async () => {
          const [row] = await sql<{ reads: string }[]>`
            select pg_stat_get_xact_tuples_returned('messages_conversation_idx'::regclass) as reads`;
          return Number(row?.reads ?? 0);
        };
        const before = await readSoFar();
        const windows = await lastInboundAts(tx, batch);
        return { windows, conversationIndexReads: (await readSoFar()) - before };
      });
      expect(windows.size).toBe(batch.length);
      // Read from messages_conversation_idx, even its matching entries mean a walk over
      // the whole conversation (the batch's ids are the index's last column).
      expect(conversationIndexReads).toBe(0);
    };
    await readsTheBatchOnly();
    await api.client.sql`analyze messages`;
    await readsTheBatchOnly();
  });
});
