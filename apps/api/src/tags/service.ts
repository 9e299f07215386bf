import { recordEvent } from "@parley/core";
import { contactTags, inTenant, isUniqueViolation, newId, tags } from "@parley/db";
import type { api, OperationInput, Tag } from "@parley/schema";
import { and, eq } from "drizzle-orm";
import { findContact } from "../contacts/queries.js";
import { loadContact } from "../contacts/serialize.js";
import type { AppContext } from "../context.js";
import { ApiError, notFound } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { listKeyOf, toPage } from "../http/pagination.js";
import { findTag, listTags } from "./queries.js";
import { serializeTag } from "./serialize.js";

type CreateInput = OperationInput<typeof api.tags.create>["body"];
type UpdateInput = OperationInput<typeof api.tags.update>["body"];
type ListQuery = OperationInput<typeof api.tags.list>["query"];

function nameTaken(): ApiError {
  return new ApiError("resource_already_exists", "A tag with this name already exists.", { param: "name" });
}

export async function listTagsPage(app: AppContext, tenant: Tenant, query: ListQuery) {
  const listKey = listKeyOf("tags.list", tenant);
  const rows = await listTags(app.db, tenant, query.limit, app.cursors.decode(listKey, query.after));
  return toPage(rows, query.limit, { codec: app.cursors, listKey }, (page) => page.map(serializeTag));
}

export async function createTag(app: AppContext, tenant: Tenant, input: CreateInput): Promise<Tag> {
  try {
    const [row] = await app.db
      .insert(tags)
      .values({ id: newId("tag"), ...tenant, name: input.name, color: input.color ?? null })
      .returning();
    if (!row) throw new Error("tag insert returned nothing");
    return serializeTag(row);
  } catch (error) {
    if (isUniqueViolation(error, "tags_name_key")) throw nameTaken();
    throw error;
  }
}

export async function updateTag(app: AppContext, tenant: Tenant, id: string, input: UpdateInput): Promise<Tag> {
  try {
    const [row] = await app.db
      .update(tags)
      .set({
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.color !== undefined ? { color: input.color } : {}),
        updatedAt: new Date(),
      })
      .where(and(inTenant(tags, tenant), eq(tags.id, id)))
      .returning();
    if (!row) throw notFound("tag", id);
    return serializeTag(row);
  } catch (error) {
    if (isUniqueViolation(error, "tags_name_key")) throw nameTaken();
    throw error;
  }
}

/** The tag leaves every contact that had it; each of them records `tag.removed`. */
export async function deleteTag(app: AppContext, tenant: Tenant, id: string) {
  await app.db.transaction(async (tx) => {
    const tag = await findTag(tx, tenant, id, true);
    if (!tag) throw notFound("tag", id);
    const links = await tx
      .delete(contactTags)
      .where(and(inTenant(contactTags, tenant), eq(contactTags.tagId, tag.id)))
      .returning({ contactId: contactTags.contactId });
    await tx.delete(tags).where(and(inTenant(tags, tenant), eq(tags.id, tag.id)));
    const removedTag = serializeTag(tag);
    for (const { contactId } of links) {
      const contact = await findContact(tx, tenant, contactId);
      if (contact)
        await recordEvent(tx, tenant, "tag.removed", { tag: removedTag, contact: await loadContact(tx, contact) });
    }
  });
  return { object: "tag" as const, id, deleted: true as const };
}
