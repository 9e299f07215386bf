import { customFields, inTenant, isUniqueViolation, newId } from "@parley/db";
import type { api, CustomField, OperationInput } from "@parley/schema";
import { and, desc } from "drizzle-orm";
import type { AppContext } from "../context.js";
import { ApiError, validationError } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { afterPosition, listKeyOf, toPage } from "../http/pagination.js";
import { keyFromName } from "./key-from-name.js";

type CreateInput = OperationInput<typeof api.customFields.create>["body"];
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
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
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
