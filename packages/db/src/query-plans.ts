import { type Placeholder, type SQL, sql } from "drizzle-orm";
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

/**
 * A LIMIT that PostgreSQL plans without knowing, for drizzle's `.limit()`: a sub-select
 * of the value (a number or a placeholder), `(select $1::int)`. Given as a plain
 * parameter, the generic plan of an ordered page took the limit for a tenth of the rows,
 * was costed far above the plan made for each call's values, and so the page was planned
 * again on every call (0.1 ms of PostgreSQL's CPU, more than running it). Written into
 * the text, the plan was made for the very limit, which stale statistics mislead: a
 * conversation they take for smaller than a page was read whole and sorted. Hidden
 * behind a sub-select, every plan is made for an unknown limit, which favours the
 * ordered index, and PostgreSQL keeps its generic plan after the first few calls.
 */
export function limitUnknownToPlanner(limit: number | Placeholder<string> | SQL): number {
  // drizzle's `.limit()` is typed for numbers and placeholders, and writes any SQL chunk
  // it is given as is.
  return valueUnknownToPlanner(limit, "int") as unknown as number;
}

/**
 * A value that PostgreSQL plans without knowing, `(select $1::type)`, for a column whose
 * values the statistics tell apart. PostgreSQL plans a prepared statement's first five
 * calls for their values and keeps its generic plan only while that costs no more than
 * those did. A conversation's page was planned for its conversation and its cursor:
 * beside a conversation holding most of the table, a small one's plan cost less than the
 * generic plan (made for an average conversation, the big one counted), and so did a
 * cursor near a conversation's oldest end (a few rows before it, against a third of the
 * conversation); a connection whose first pages were such planned every later one again
 * (10 % of the pages of traffic spread over 2,000 conversations, every deep page of the
 * bench; 0.1 ms of PostgreSQL's CPU each). Hidden, every plan of the statement is the
 * generic one, kept after the first few calls.
 */
export function valueUnknownToPlanner(value: unknown, type: "int" | "text" | "timestamptz"): SQL {
  return sql`(select ${value}::${sql.raw(type)})`;
}
