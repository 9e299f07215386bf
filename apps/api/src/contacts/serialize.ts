import { serializeContact } from "@parley/core";
import type { Queryable } from "@parley/db";
import type { Contact } from "@parley/schema";
import { type ContactRow, tagIdsByContact } from "./queries.js";

/** Contacts as GET returns them, their tags fetched in one query. */
export async function loadContacts(db: Queryable, rows: ContactRow[]): Promise<Contact[]> {
  const [first] = rows;
  if (!first) return [];
  // The rows of one call are of one tenant.
  const tenant = { organizationId: first.organizationId, environment: first.environment };
  const tags = await tagIdsByContact(
    db,
    tenant,
    rows.map((row) => row.id),
  );
  return rows.map((row) => serializeContact(row, tags.get(row.id) ?? []));
}

export async function loadContact(db: Queryable, row: ContactRow): Promise<Contact> {
  const [contact] = await loadContacts(db, [row]);
  if (!contact) throw new Error("contact serialization returned nothing");
  return contact;
}

export { serializeContact };
