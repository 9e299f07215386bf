import { describe, expect, it } from "vitest";
import { useTestApi } from "./harness.js";

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

function planNodes(plan: Record<string, unknown>): string[] {
  const children = (plan.Plans as Record<string, unknown>[] | undefined) ?? [];
  return [String(plan["Node Type"]), ...children.flatMap(planNodes)];
}

function indexNames(plan: Record<string, unknown>): string[] {
  const children = (plan.Plans as Record<string, unknown>[] | undefined) ?? [];
  const own = typeof plan["Index Name"] === "string" ? [plan["Index Name"]] : [];
  return [...own, ...children.flatMap(indexNames)];
}

/** The plan of a query, with sorting and sequential scans made as costly as on a long table. */
async function planOf(query: string): Promise<Record<string, unknown>> {
  return api.client.sql.begin(async (sql) => {
    await sql`set local enable_sort = off`;
    await sql`set local enable_seqscan = off`;
    const [row] = await sql.unsafe(`explain (format json) ${query}`);
    return (row as unknown as { "QUERY PLAN": { Plan: Record<string, unknown> }[] })["QUERY PLAN"][0]?.Plan ?? {};
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
