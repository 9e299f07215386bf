import type { Queryable } from "@parley/db";
import type { Contact } from "@parley/schema";
import { type ContactRow, tagIdsByContact } from "./queries.js";

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
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/** Contacts as GET returns them, their tags fetched in one query. */
export async function loadContacts(db: Queryable, rows: ContactRow[]): Promise<Contact[]> {
  const tags = await tagIdsByContact(
    db,
    rows.map((row) => row.id),
  );
  return rows.map((row) => serializeContact(row, tags.get(row.id) ?? []));
}

export async function loadContact(db: Queryable, row: ContactRow): Promise<Contact> {
  const [contact] = await loadContacts(db, [row]);
  if (!contact) throw new Error("contact serialization returned nothing");
  return contact;
}
