import { apiTimestamp, recordEvent } from "@parley/core";
import { contacts, customFields, inTenant, isUniqueViolation, newId, type Queryable } from "@parley/db";
import type { api, CustomField, OperationInput } from "@parley/schema";
import { and, desc, eq, sql } from "drizzle-orm";
import { loadContact } from "../contacts/serialize.js";
import type { AppContext } from "../context.js";
import { ApiError, notFound, validationError } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { afterPosition, listKeyOf, toPage } from "../http/pagination.js";
import { keyFromName } from "./key-from-name.js";

type CreateInput = OperationInput<typeof api.customFields.create>["body"];
type UpdateInput = OperationInput<typeof api.customFields.update>["body"];
type ListQuery = OperationInput<typeof api.customFields.list>["query"];
type CustomFieldRow = typeof customFields.$inferSelect;

export function serializeCustomField(row: CustomFieldRow): CustomField {
  return {
    object: "custom_field",
    id: row.id,
    name: row.name,
    key: row.key,
    scope: row.scope,
    value: row.value,
    created_at: apiTimestamp(row.createdAt),
    updated_at: apiTimestamp(row.updatedAt),
  };
}

export async function listCustomFieldsPage(app: AppContext, tenant: Tenant, query: ListQuery) {
  const listKey = listKeyOf("custom_fields.list", tenant);
  const after = app.cursors.decode(listKey, query.after);
  const rows = await app.db
    .select()
    .from(customFields)
    .where(and(inTenant(customFields, tenant), afterPosition(customFields, after)))
    .orderBy(desc(customFields.createdAt), desc(customFields.id))
    .limit(query.limit + 1);
  return toPage(rows, query.limit, { codec: app.cursors, listKey }, (page) => page.map(serializeCustomField));
}

export async function createCustomField(app: AppContext, tenant: Tenant, input: CreateInput): Promise<CustomField> {
  if (input.value !== undefined && input.scope !== "organization") {
    throw validationError("value", "only an `organization` custom field holds a value");
  }
  const key = input.key ?? keyFromName(input.name);
  try {
    const [row] = await app.db
      .insert(customFields)
      .values({
        id: newId("customField"),
        ...tenant,
        name: input.name,
        key,
        scope: input.scope,
        value: input.value ?? null,
      })
      .returning();
    if (!row) throw new Error("custom field insert returned nothing");
    return serializeCustomField(row);
  } catch (error) {
    if (isUniqueViolation(error, "custom_fields_key_key")) {
      throw new ApiError("resource_already_exists", `A custom field with the key '${key}' already exists.`, {
        param: input.key !== undefined ? "key" : "name",
      });
    }
    throw error;
  }
}

async function findCustomField(db: Queryable, tenant: Tenant, id: string, lock?: "update") {
  const query = db
    .select()
    .from(customFields)
    .where(and(inTenant(customFields, tenant), eq(customFields.id, id)));
  const [row] = lock ? await query.for(lock) : await query;
  return row;
}

/** The key and the scope stay; only an `organization` field holds a value. */
export async function updateCustomField(
  app: AppContext,
  tenant: Tenant,
  id: string,
  input: UpdateInput,
): Promise<CustomField> {
  return app.db.transaction(async (tx) => {
    const current = await findCustomField(tx, tenant, id, "update");
    if (!current) throw notFound("custom field", id);
    if (input.value !== undefined && input.value !== null && current.scope !== "organization") {
      throw validationError("value", "only an `organization` custom field holds a value");
    }
    const [row] = await tx
      .update(customFields)
      .set({
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.value !== undefined ? { value: input.value } : {}),
        updatedAt: new Date(),
      })
      .where(and(inTenant(customFields, tenant), eq(customFields.id, current.id)))
      .returning();
    if (!row) throw notFound("custom field", id);
    return serializeCustomField(row);
  });
}

/** Removes the key from every contact that holds it, each recording `contact.updated`. */
async function removeValues(tx: Queryable, tenant: Tenant, key: string) {
  const rows = await tx
    .update(contacts)
    .set({ customFields: sql`${contacts.customFields} - ${key}::text`, updatedAt: new Date() })
    .where(and(inTenant(contacts, tenant), sql`${contacts.customFields} ? ${key}::text`))
    .returning();
  for (const row of rows) await recordEvent(tx, tenant, "contact.updated", { contact: await loadContact(tx, row) });
}

/**
 * The field and its values go in one transaction. Contacts are changed before the field
 * is locked, the order a contact write takes them in (contact, then field), so the two
 * never deadlock; the second pass catches a value written while the first one ran.
 */
export async function deleteCustomField(app: AppContext, tenant: Tenant, id: string) {
  await app.db.transaction(async (tx) => {
    const found = await findCustomField(tx, tenant, id);
    if (!found) throw notFound("custom field", id);
    if (found.scope === "contact") await removeValues(tx, tenant, found.key);
    const field = await findCustomField(tx, tenant, id, "update");
    if (!field) throw notFound("custom field", id);
    if (field.scope === "contact") await removeValues(tx, tenant, field.key);
    await tx.delete(customFields).where(and(inTenant(customFields, tenant), eq(customFields.id, field.id)));
  });
  return { object: "custom_field" as const, id, deleted: true as const };
}
