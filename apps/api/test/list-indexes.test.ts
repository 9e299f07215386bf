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

describe("list indexes", () => {
  it.each(lists)("%s: the first page comes from the index, without sorting", async (table, where) => {
    const plan = await api.client.sql.begin(async (sql) => {
      // Sorting made as costly as it is on a long list: only an ordered index avoids it.
      await sql`set local enable_sort = off`;
      await sql`set local enable_seqscan = off`;
      const [row] = await sql.unsafe(
        `explain (format json) select * from ${table} where ${where} order by created_at desc, id desc limit 26`,
      );
      return (row as unknown as { "QUERY PLAN": { Plan: Record<string, unknown> }[] })["QUERY PLAN"][0]?.Plan ?? {};
    });
    const nodes = planNodes(plan);
    expect(nodes).not.toContain("Sort");
    expect(nodes.some((node) => node.includes("Index"))).toBe(true);
  });
});
