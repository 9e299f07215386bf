import { apiTimestamp } from "@parley/core";
import { type Queryable, users } from "@parley/db";
import type { api, OperationInput, User } from "@parley/schema";
import { and, desc, eq } from "drizzle-orm";
import type { AppContext } from "../context.js";
import { notFound } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { afterPosition, listKeyOf, toPage } from "../http/pagination.js";

export type UserRow = typeof users.$inferSelect;
type ListQuery = OperationInput<typeof api.users.list>["query"];

export function serializeUser(row: UserRow): User {
  return {
    object: "user",
    id: row.id,
    name: row.name,
    email: row.email,
    created_at: apiTimestamp(row.createdAt),
    updated_at: apiTimestamp(row.updatedAt),
  };
}

/** Agents belong to the organization as a whole: live and test keys see the same ones. */
export async function findUser(db: Queryable, tenant: Tenant, id: string) {
  const [row] = await db
    .select()
    .from(users)
    .where(and(eq(users.organizationId, tenant.organizationId), eq(users.id, id)));
  return row;
}

export async function listUsersPage(app: AppContext, tenant: Tenant, query: ListQuery) {
  const listKey = listKeyOf("users.list", tenant);
  const after = app.cursors.decode(listKey, query.after);
  const rows = await app.db
    .select()
    .from(users)
    .where(and(eq(users.organizationId, tenant.organizationId), afterPosition(users, after)))
    .orderBy(desc(users.createdAt), desc(users.id))
    .limit(query.limit + 1);
  return toPage(rows, query.limit, { codec: app.cursors, listKey }, (page) => page.map(serializeUser));
}

export async function getUser(app: AppContext, tenant: Tenant, id: string): Promise<User> {
  const row = await findUser(app.db, tenant, id);
  if (!row) throw notFound("user", id);
  return serializeUser(row);
}
