import { eventRows, recordEvents } from "@parley/core";
import { isUniqueViolation, newId, type Queryable } from "@parley/db";
import type { api, Contact, OperationInput } from "@parley/schema";
import { type AppContext, relayNow, withTransaction } from "../context.js";
import { ApiError, notFound } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { listKeyOf, toPage } from "../http/pagination.js";
import { findTagsByIds, type TagRow } from "../tags/queries.js";
import { serializeTag } from "../tags/serialize.js";
import { eraseContact } from "./erasure.js";
import {
  addContactTags,
  type ContactRow,
  contactFieldKeys,
  findContact,
  findContactByExternalId,
  insertContactWithEvents,
  listContacts,
  type NewContactRow,
  removeContactTags,
  tagIdsByContact,
  UNSET_CONTACT_COLUMNS,
  updateContactRow,
} from "./queries.js";
import { loadContact, loadContacts, serializeContact } from "./serialize.js";

type CreateInput = OperationInput<typeof api.contacts.create>["body"];
type UpdateInput = OperationInput<typeof api.contacts.update>["body"];
type ListQuery = OperationInput<typeof api.contacts.list>["query"];

export async function listContactsPage(app: AppContext, tenant: Tenant, query: ListQuery) {
  const listKey = listKeyOf("contacts.list", tenant);
  const after = app.cursors.decode(listKey, query.after);
  const filters = {
    email: query.email,
    phone: query.phone,
    externalId: query.external_id,
    query: query.query,
    tagId: query.tag_id,
    createdAfter: query.created_after,
    createdBefore: query.created_before,
  };
  const rows = await listContacts(app.db, tenant, filters, query.limit, after);
  const hasMore = rows.length > query.limit;
  const contacts = await loadContacts(app.db, hasMore ? rows.slice(0, query.limit) : rows);
  return toPage(rows, query.limit, { codec: app.cursors, listKey }, () => contacts);
}

export async function getContact(app: AppContext, tenant: Tenant, id: string): Promise<Contact> {
  const row = await findContact(app.db, tenant, id);
  if (!row) throw notFound("contact", id);
  return loadContact(app.db, row);
}

/**
 * Find-or-create on `external_id`: an existing contact comes back unchanged. A contact
 * with tags or custom fields reads them first, in a transaction with the write; one
 * without is a single statement (insertContactWithEvents), its own transaction.
 */
export async function createContact(
  app: AppContext,
  tenant: Tenant,
  input: CreateInput,
): Promise<{ contact: Contact; created: boolean }> {
  if (input.external_id) {
    const existing = await findContactByExternalId(app.db, tenant, input.external_id);
    if (existing) return { contact: await loadContact(app.db, existing), created: false };
  }
  const fieldKeys = Object.keys(input.custom_fields ?? {});
  const create = async (db: Queryable) => {
    const tags = await requireTags(db, tenant, input.tags ?? []);
    const tagIds = tags.map((tag) => tag.id);
    await requireContactFields(db, tenant, fieldKeys);
    const now = new Date();
    const row: ContactRow = {
      id: newId("contact"),
      ...tenant,
      ...UNSET_CONTACT_COLUMNS,
      ...columnsOf(input),
      customFields: input.custom_fields ?? {},
      metadata: input.metadata ?? {},
      createdAt: now,
      updatedAt: now,
    };
    // The new contact's tags are the ones just added, in the order given.
    const contact = serializeContact(row, tagIds);
    // One batch for the contact's events, in order, to each endpoint.
    const events = eventRows([
      { tenant, type: "contact.created", data: { contact } },
      ...tagEvents(tenant, contact, tags, "tag.added"),
    ]);
    if (await insertContactWithEvents(db, row, tagIds, events, { relayNow: relayNow(app) })) {
      return { contact, created: true };
    }
    // Another request created the same external_id between our look-up and our insert.
    const winner = input.external_id ? await findContactByExternalId(db, tenant, input.external_id) : undefined;
    if (!winner) throw new Error("contact insert conflicted without an external_id");
    return { contact: await loadContact(db, winner), created: false };
  };
  if ((input.tags?.length ?? 0) === 0 && fieldKeys.length === 0) return create(app.db);
  return app.db.transaction(create);
}

export async function updateContact(app: AppContext, tenant: Tenant, id: string, input: UpdateInput): Promise<Contact> {
  try {
    return await app.db.transaction(async (tx) => {
      const current = await findContact(tx, tenant, id, true);
      if (!current) throw notFound("contact", id);
      const customFields = await mergedCustomFields(tx, tenant, current, input.custom_fields);
      const row = await updateContactRow(tx, tenant, current.id, {
        ...columnsOf(input),
        ...(customFields ? { customFields } : {}),
        ...(input.metadata !== undefined ? { metadata: input.metadata } : {}),
      });
      if (!row) throw notFound("contact", id);
      const tagChanges = input.tags ? await replaceTags(tx, tenant, row.id, input.tags) : undefined;
      const contact = await loadContact(tx, row);
      await recordEvents(
        tx,
        [
          { tenant, type: "contact.updated", data: { contact } },
          ...tagEvents(tenant, contact, tagChanges?.added ?? [], "tag.added"),
          ...tagEvents(tenant, contact, tagChanges?.removed ?? [], "tag.removed"),
        ],
        { relayNow: relayNow(app) },
      );
      return contact;
    });
  } catch (error) {
    if (isUniqueViolation(error, "contacts_external_id_key")) {
      throw new ApiError("resource_already_exists", "Another contact already has this external_id.", {
        param: "external_id",
      });
    }
    throw error;
  }
}

/** "Irreversibly cascades" (the spec): every copy of the contact's data goes, in one transaction. */
export async function deleteContact(app: AppContext, tenant: Tenant, id: string) {
  const deleted = await withTransaction(app, (tx) => eraseContact(tx, tenant, id));
  if (!deleted) throw notFound("contact", id);
  return { object: "contact" as const, id, deleted: true as const };
}

/**
 * Adds and removes tags on a contact and records `tag.added` / `tag.removed` for each
 * actual change, inside the caller's transaction. Conversations tag through this too.
 */
export async function changeContactTags(
  tx: Queryable,
  tenant: Tenant,
  contact: ContactRow,
  change: { add?: readonly TagRow[]; remove?: readonly TagRow[] },
): Promise<Contact> {
  const current = new Set((await tagIdsByContact(tx, tenant, [contact.id])).get(contact.id) ?? []);
  const added = (change.add ?? []).filter((tag) => !current.has(tag.id));
  const removed = (change.remove ?? []).filter((tag) => current.has(tag.id));
  await addContactTags(
    tx,
    tenant,
    contact.id,
    added.map((tag) => tag.id),
  );
  await removeContactTags(
    tx,
    tenant,
    contact.id,
    removed.map((tag) => tag.id),
  );
  const row = added.length + removed.length > 0 ? await updateContactRow(tx, tenant, contact.id, {}) : contact;
  const serialized = await loadContact(tx, row ?? contact);
  await recordEvents(tx, [
    ...tagEvents(tenant, serialized, added, "tag.added"),
    ...tagEvents(tenant, serialized, removed, "tag.removed"),
  ]);
  return serialized;
}

async function replaceTags(tx: Queryable, tenant: Tenant, contactId: string, requested: readonly string[]) {
  const wanted = await requireTags(tx, tenant, requested);
  const tagIds = wanted.map((tag) => tag.id);
  const current = (await tagIdsByContact(tx, tenant, [contactId])).get(contactId) ?? [];
  const removedIds = current.filter((tagId) => !tagIds.includes(tagId));
  const added = wanted.filter((tag) => !current.includes(tag.id));
  const removed = await findTagsByIds(tx, tenant, removedIds);
  await removeContactTags(tx, tenant, contactId, removedIds);
  await addContactTags(
    tx,
    tenant,
    contactId,
    added.map((tag) => tag.id),
  );
  return { added, removed };
}

/** A `tag.added` or `tag.removed` event for each tag, to record with recordEvents. */
function tagEvents(tenant: Tenant, contact: Contact, tags: readonly TagRow[], type: "tag.added" | "tag.removed") {
  return tags.map((tag) => ({ tenant, type, data: { tag: serializeTag(tag), contact } }));
}

/**
 * Every tag id must name a tag of this organization and environment; the tags come back
 * once each, in the order given, locked against deletion until the transaction ends.
 */
async function requireTags(tx: Queryable, tenant: Tenant, tagIds: readonly string[]): Promise<TagRow[]> {
  const found = await findTagsByIds(tx, tenant, tagIds, true);
  const byId = new Map(found.map((tag) => [tag.id, tag]));
  const missing = tagIds.findIndex((tagId) => !byId.has(tagId));
  if (missing >= 0) {
    throw new ApiError("resource_not_found", `No such tag: '${tagIds[missing]}'`, { param: `tags.${missing}` });
  }
  return unique(tagIds).flatMap((tagId) => byId.get(tagId) ?? []);
}

async function requireContactFields(tx: Queryable, tenant: Tenant, keys: string[]) {
  if (keys.length === 0) return;
  const known = await contactFieldKeys(tx, tenant, keys);
  const unknown = keys.filter((key) => !known.has(key));
  if (unknown.length === 0) return;
  const details = unknown.map((key) => ({
    param: `custom_fields.${key}`,
    message: "is not a contact custom field; create it with POST /v1/custom-fields",
  }));
  throw new ApiError("validation_error", `Unknown custom field: ${unknown.join(", ")}`, {
    param: details[0]?.param ?? "custom_fields",
    details,
  });
}

async function mergedCustomFields(
  tx: Queryable,
  tenant: Tenant,
  current: ContactRow,
  changes: Record<string, string | null> | undefined,
) {
  if (!changes) return undefined;
  await requireContactFields(tx, tenant, Object.keys(changes));
  const merged: Record<string, unknown> = { ...current.customFields };
  for (const [key, value] of Object.entries(changes)) {
    if (value === null) delete merged[key];
    else merged[key] = value;
  }
  return merged;
}

/** The plain columns of an input; `undefined` (absent) leaves a column alone. */
function columnsOf(input: CreateInput | UpdateInput): Partial<NewContactRow> {
  const columns: Partial<NewContactRow> = {};
  if (input.name !== undefined) columns.name = input.name;
  if (input.first_name !== undefined) columns.firstName = input.first_name;
  if (input.last_name !== undefined) columns.lastName = input.last_name;
  if (input.email !== undefined) columns.email = input.email;
  if (input.phone !== undefined) columns.phone = input.phone;
  if (input.external_id !== undefined) columns.externalId = input.external_id;
  if (input.avatar_url !== undefined) columns.avatarUrl = input.avatar_url;
  return columns;
}

function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}
