import type { contacts } from "@parley/db";
import type { Contact } from "@parley/schema";
import { apiTimestamp } from "../serialize/timestamp.js";

export type ContactRow = typeof contacts.$inferSelect;

export function serializeContact(row: ContactRow, tagIds: string[]): Contact {
  return {
    object: "contact",
    id: row.id,
    name: row.name,
    first_name: row.firstName,
    last_name: row.lastName,
    email: row.email,
    phone: row.phone,
    external_id: row.externalId,
    avatar_url: row.avatarUrl,
    tags: tagIds,
    custom_fields: row.customFields as Record<string, string>,
    metadata: row.metadata,
    created_at: apiTimestamp(row.createdAt),
    updated_at: apiTimestamp(row.updatedAt),
  };
}
