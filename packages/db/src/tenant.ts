import { and, eq, type SQL, sql } from "drizzle-orm";
import type { PgColumn } from "drizzle-orm/pg-core";

export interface TenantScope {
  organizationId: string;
  environment: "live" | "test";
}

/**
 * The filter every tenant query carries: a row of another organization or environment
 * is indistinguishable from one that does not exist.
 */
export function inTenant(table: { organizationId: PgColumn; environment: PgColumn }, tenant: TenantScope): SQL {
  return and(eq(table.organizationId, tenant.organizationId), eq(table.environment, tenant.environment)) as SQL;
}

/** `inTenant` for a `reusableQuery`: the values come from placeholders `organizationId` and `environment`. */
export function inTenantPlaceholders(table: { organizationId: PgColumn; environment: PgColumn }): SQL {
  return and(
    eq(table.organizationId, sql.placeholder("organizationId")),
    eq(table.environment, sql.placeholder("environment")),
  ) as SQL;
}

/** PostgreSQL's unique_violation, for turning a race on a unique key into a clear answer. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  if (typeof error !== "object" || error === null) return false;
  const candidate = (error as { cause?: unknown }).cause ?? error;
  const pgError = candidate as { code?: string; constraint_name?: string };
  return pgError.code === "23505" && (constraint === undefined || pgError.constraint_name === constraint);
}

/** PostgreSQL's foreign_key_violation: a row written against one deleted meanwhile. */
export function isForeignKeyViolation(error: unknown, constraint?: string): boolean {
  if (typeof error !== "object" || error === null) return false;
  const candidate = (error as { cause?: unknown }).cause ?? error;
  const pgError = candidate as { code?: string; constraint_name?: string };
  return pgError.code === "23503" && (constraint === undefined || pgError.constraint_name === constraint);
}
