import { eventRecording, eventsRecorded, type NewEventRow, type RecordOptions } from "@parley/core";
import {
  contacts,
  contactTags,
  customFields,
  inTenant,
  postgresClientOf,
  type Queryable,
  reusableQuery,
  type TenantScope,
} from "@parley/db";
import { and, asc, desc, eq, gte, ilike, inArray, lt, or, type SQL, sql } from "drizzle-orm";
import { afterPosition, type KeysetPosition } from "../http/pagination.js";

export type ContactRow = typeof contacts.$inferSelect;
export type NewContactRow = typeof contacts.$inferInsert;

export interface ContactFilters {
  email?: string | undefined;
  phone?: string | undefined;
  externalId?: string | undefined;
  query?: string | undefined;
  tagId?: string | undefined;
  createdAfter?: Date | undefined;
  createdBefore?: Date | undefined;
}

/** `%` and `_` typed by a user are literal characters, not wildcards. */
function containing(text: string): string {
  return `%${text.replace(/[\\%_]/g, (character) => `\\${character}`)}%`;
}

function filterConditions(filters: ContactFilters): (SQL | undefined)[] {
  const search = filters.query ? containing(filters.query) : undefined;
  return [
    filters.email ? sql`lower(${contacts.email}) = lower(${filters.email})` : undefined,
    filters.phone ? eq(contacts.phone, filters.phone) : undefined,
    filters.externalId ? eq(contacts.externalId, filters.externalId) : undefined,
    search
      ? or(
          ilike(contacts.name, search),
          ilike(contacts.email, search),
          ilike(contacts.phone, search),
          ilike(contacts.externalId, search),
        )
      : undefined,
    filters.tagId
      ? sql`exists (select 1 from ${contactTags} where ${contactTags.contactId} = ${contacts.id} and ${contactTags.tagId} = ${filters.tagId})`
      : undefined,
    filters.createdAfter ? gte(contacts.createdAt, filters.createdAfter) : undefined,
    filters.createdBefore ? lt(contacts.createdAt, filters.createdBefore) : undefined,
  ];
}

export async function listContacts(
  db: Queryable,
  tenant: TenantScope,
  filters: ContactFilters,
  limit: number,
  after?: KeysetPosition,
) {
  return db
    .select()
    .from(contacts)
    .where(and(inTenant(contacts, tenant), afterPosition(contacts, after), ...filterConditions(filters)))
    .orderBy(desc(contacts.createdAt), desc(contacts.id))
    .limit(limit + 1);
}

export async function findContact(db: Queryable, tenant: TenantScope, id: string, lock = false) {
  const query = db
    .select()
    .from(contacts)
    .where(and(inTenant(contacts, tenant), eq(contacts.id, id)));
  const [row] = lock ? await query.for("update") : await query;
  return row;
}

export async function findContactByExternalId(db: Queryable, tenant: TenantScope, externalId: string) {
  const [row] = await db
    .select()
    .from(contacts)
    .where(and(inTenant(contacts, tenant), eq(contacts.externalId, externalId)));
  return row;
}

type InsertedContact = Required<
  Pick<NewContactRow, "id" | "organizationId" | "environment" | "customFields" | "metadata">
> &
  Pick<NewContactRow, "name" | "firstName" | "lastName" | "email" | "phone" | "externalId" | "avatarUrl">;

const insertContactQuery = reusableQuery((db) =>
  db
    .insert(contacts)
    .values({
      id: sql.placeholder("id"),
      organizationId: sql.placeholder("organizationId"),
      environment: sql.placeholder("environment"),
      name: sql.placeholder("name"),
      firstName: sql.placeholder("firstName"),
      lastName: sql.placeholder("lastName"),
      email: sql.placeholder("email"),
      phone: sql.placeholder("phone"),
      externalId: sql.placeholder("externalId"),
      avatarUrl: sql.placeholder("avatarUrl"),
      customFields: sql.placeholder("customFields"),
      metadata: sql.placeholder("metadata"),
    })
    .onConflictDoNothing({
      target: [contacts.organizationId, contacts.environment, contacts.externalId],
      where: sql`${contacts.externalId} is not null`,
    })
    .returning()
    .prepare("insert_contact"),
);

/** The optional columns of a new contact, each null until its input gives it. */
export const UNSET_CONTACT_COLUMNS = {
  name: null,
  firstName: null,
  lastName: null,
  email: null,
  phone: null,
  externalId: null,
  avatarUrl: null,
} satisfies Partial<ContactRow>;

/** Inserts unless the external_id is taken; undefined tells the caller to find the winner. */
export async function insertContact(db: Queryable, row: InsertedContact): Promise<ContactRow | undefined> {
  const [inserted] = await insertContactQuery(db, { ...UNSET_CONTACT_COLUMNS, ...row });
  return inserted;
}

/**
 * A new contact, its tags (in the order given) and its events, in one statement: unless
 * its `external_id` is taken (false: the caller finds the winner), when nothing is
 * written. Every column is given, so the contact is answered without reading it back;
 * run on the pool, the statement is its own transaction, of one round trip.
 */
export async function insertContactWithEvents(
  db: Queryable,
  row: ContactRow,
  tagIds: readonly string[],
  events: readonly NewEventRow[],
  options: RecordOptions,
): Promise<boolean> {
  const client = postgresClientOf(db);
  const contact = client`exists (select 1 from contact)`;
  const [result] = await client<{ inserted: boolean }[]>`
    with contact as (
      insert into contacts (id, organization_id, environment, name, first_name, last_name, email, phone,
                            external_id, avatar_url, custom_fields, metadata, created_at, updated_at)
      values (${row.id}, ${row.organizationId}, ${row.environment}, ${row.name}, ${row.firstName}, ${row.lastName},
              ${row.email}, ${row.phone}, ${row.externalId}, ${row.avatarUrl}, ${JSON.stringify(row.customFields)}::jsonb,
              ${JSON.stringify(row.metadata)}::jsonb, ${row.createdAt.toISOString()}::timestamptz,
              ${row.updatedAt.toISOString()}::timestamptz)
      on conflict (organization_id, environment, external_id) where external_id is not null do nothing
      returning id
    ),
    tagged as (
      -- Distinct milliseconds keep the order the caller gave (as addContactTags).
      insert into contact_tags (contact_id, tag_id, organization_id, environment, created_at)
      select contact.id, tag.id, ${row.organizationId}, ${row.environment},
             ${row.createdAt.toISOString()}::timestamptz + (tag.position - 1) * interval '1 millisecond'
      from contact, jsonb_array_elements_text(${JSON.stringify(tagIds)}::jsonb) with ordinality as tag(id, position)
    ),
    ${eventRecording(client, events, options, contact)}
    select ${contact} as inserted, ${eventsRecorded(client)}`;
  return result?.inserted === true;
}

export async function updateContactRow(
  db: Queryable,
  tenant: TenantScope,
  id: string,
  changes: Partial<NewContactRow>,
) {
  const [row] = await db
    .update(contacts)
    .set({ ...changes, updatedAt: new Date() })
    .where(and(inTenant(contacts, tenant), eq(contacts.id, id)))
    .returning();
  return row;
}

export async function deleteContactRow(db: Queryable, tenant: TenantScope, id: string) {
  const deleted = await db
    .delete(contacts)
    .where(and(inTenant(contacts, tenant), eq(contacts.id, id)))
    .returning({ id: contacts.id });
  return deleted.length > 0;
}

/** Tag ids per contact, in the order they were applied. */
export async function tagIdsByContact(
  db: Queryable,
  tenant: TenantScope,
  contactIds: readonly string[],
): Promise<Map<string, string[]>> {
  const byContact = new Map<string, string[]>();
  if (contactIds.length === 0) return byContact;
  const rows = await db
    .select({ contactId: contactTags.contactId, tagId: contactTags.tagId })
    .from(contactTags)
    .where(and(inTenant(contactTags, tenant), inArray(contactTags.contactId, [...contactIds])))
    .orderBy(asc(contactTags.createdAt), asc(contactTags.tagId));
  for (const row of rows) {
    const list = byContact.get(row.contactId) ?? [];
    list.push(row.tagId);
    byContact.set(row.contactId, list);
  }
  return byContact;
}

export async function addContactTags(db: Queryable, tenant: TenantScope, contactId: string, tagIds: readonly string[]) {
  if (tagIds.length === 0) return;
  const now = Date.now();
  await db
    .insert(contactTags)
    .values(
      // Distinct milliseconds keep the order the caller gave.
      tagIds.map((tagId, index) => ({ contactId, tagId, ...tenant, createdAt: new Date(now + index) })),
    )
    .onConflictDoNothing();
}

export async function removeContactTags(
  db: Queryable,
  tenant: TenantScope,
  contactId: string,
  tagIds: readonly string[],
) {
  if (tagIds.length === 0) return;
  await db
    .delete(contactTags)
    .where(
      and(inTenant(contactTags, tenant), eq(contactTags.contactId, contactId), inArray(contactTags.tagId, [...tagIds])),
    );
}

/**
 * Which of `keys` name contact custom fields; those are held (`key share`) until the
 * transaction ends, so a concurrent delete of the field waits and then removes the value.
 */
export async function contactFieldKeys(
  db: Queryable,
  tenant: TenantScope,
  keys: readonly string[],
): Promise<Set<string>> {
  const rows = await db
    .select({ key: customFields.key })
    .from(customFields)
    .where(and(inTenant(customFields, tenant), eq(customFields.scope, "contact"), inArray(customFields.key, [...keys])))
    .for("key share");
  return new Set(rows.map((row) => row.key));
}
