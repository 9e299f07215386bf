import type postgres from "postgres";

/** One node of a plan as `EXPLAIN (FORMAT JSON)` gives it. */
export interface PlanNode {
  [field: string]: unknown;
  Plans?: PlanNode[];
}

/** A scan of a plan: its node type, table, index, and the rows it read when analysed. */
export interface PlanScan {
  node: string;
  relation: string | undefined;
  index: string | undefined;
  rows: number;
}

/** The plan of a row that `EXPLAIN (FORMAT JSON)` answered. */
export function planOfExplained(row: unknown): PlanNode {
  return (row as { "QUERY PLAN": { Plan: PlanNode }[] })["QUERY PLAN"][0]?.Plan ?? {};
}

/**
 * For tests: the generic plan of `statement` (the plan PostgreSQL keeps for a statement
 * prepared and run a few times, made without its parameters' values), run by EXPLAIN
 * ANALYZE with `parameters`. `sql` is a transaction, and the caller rolls back what the
 * statement wrote.
 */
export async function explainGenericPlan(
  sql: postgres.TransactionSql,
  statement: string,
  parameters: readonly unknown[],
): Promise<PlanNode> {
  const literals = parameters.map((value) =>
    typeof value === "number" ? String(value) : `'${String(value).replaceAll("'", "''")}'`,
  );
  await sql.unsafe(`prepare generic_plan as ${statement}`);
  await sql`set local plan_cache_mode = force_generic_plan`;
  const [row] = await sql.unsafe(`explain (analyze, format json) execute generic_plan(${literals.join(", ")})`);
  await sql`deallocate generic_plan`;
  return planOfExplained(row);
}

/** Every scan of a plan, depth first. */
export function scansOf(plan: PlanNode): PlanScan[] {
  const children = plan.Plans ?? [];
  const node = String(plan["Node Type"]);
  const own: PlanScan[] = node.includes("Scan")
    ? [
        {
          node,
          relation: plan["Relation Name"] as string | undefined,
          index: plan["Index Name"] as string | undefined,
          rows: Number(plan["Actual Rows"] ?? 0) * Number(plan["Actual Loops"] ?? 1),
        },
      ]
    : [];
  return [...own, ...children.flatMap(scansOf)];
}
