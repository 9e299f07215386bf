import { inTenant, type Queryable, type TenantScope, tags } from "@parley/db";
import { and, desc, eq, inArray } from "drizzle-orm";
import { afterPosition, type KeysetPosition } from "../http/pagination.js";

export type TagRow = typeof tags.$inferSelect;

export async function listTags(db: Queryable, tenant: TenantScope, limit: number, after?: KeysetPosition) {
  return db
    .select()
    .from(tags)
    .where(and(inTenant(tags, tenant), afterPosition(tags, after)))
    .orderBy(desc(tags.createdAt), desc(tags.id))
    .limit(limit + 1);
}

export async function findTag(db: Queryable, tenant: TenantScope, id: string, lock = false) {
  const query = db
    .select()
    .from(tags)
    .where(and(inTenant(tags, tenant), eq(tags.id, id)));
  const [row] = lock ? await query.for("update") : await query;
  return row;
}

/**
 * `lock` holds the rows until the transaction ends, so a tag being linked to a contact
 * cannot be deleted meanwhile: a concurrent delete either waits for the link, or wins
 * and the tag is simply not found (never a foreign-key failure).
 */
export async function findTagsByIds(db: Queryable, tenant: TenantScope, ids: readonly string[], lock = false) {
  if (ids.length === 0) return [];
  const query = db
    .select()
    .from(tags)
    .where(and(inTenant(tags, tenant), inArray(tags.id, [...ids])));
  return lock ? query.for("key share") : query;
}
