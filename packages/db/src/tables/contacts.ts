import { sql } from "drizzle-orm";
import { index, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import { createdAt, jsonObject, tenantColumns, updatedAt } from "./columns.js";

export const contacts = pgTable(
  "contacts",
  {
    id: text("id").primaryKey(),
    ...tenantColumns(),
    name: text("name"),
    firstName: text("first_name"),
    lastName: text("last_name"),
    email: text("email"),
    phone: text("phone"),
    externalId: text("external_id"),
    avatarUrl: text("avatar_url"),
    /** Values by custom-field key; only keys of contact-scoped custom fields. */
    customFields: jsonObject("custom_fields"),
    metadata: jsonObject("metadata"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("contacts_list_idx").on(
      t.organizationId,
      t.environment,
      t.createdAt.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
    uniqueIndex("contacts_external_id_key")
      .on(t.organizationId, t.environment, t.externalId)
      .where(sql`${t.externalId} is not null`),
    index("contacts_email_idx").on(t.organizationId, t.environment, sql`lower(${t.email})`),
    index("contacts_phone_idx").on(t.organizationId, t.environment, t.phone),
    // A phone as its digits: inbound WhatsApp and SMS find their contact by number however
    // the business typed it (`+1 415-555-0100`, `(415) 555-0100`), in one index probe.
    index("contacts_phone_digits_idx").on(
      t.organizationId,
      t.environment,
      sql`regexp_replace(${t.phone}, '[^0-9]', '', 'g')`,
    ),
  ],
);

export const tags = pgTable(
  "tags",
  {
    id: text("id").primaryKey(),
    ...tenantColumns(),
    name: text("name").notNull(),
    color: text("color"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("tags_list_idx").on(
      t.organizationId,
      t.environment,
      t.createdAt.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
    uniqueIndex("tags_name_key").on(t.organizationId, t.environment, sql`lower(${t.name})`),
  ],
);

/** The only tag link that exists: conversations are tagged through their contact. */
export const contactTags = pgTable(
  "contact_tags",
  {
    contactId: text("contact_id")
      .notNull()
      .references(() => contacts.id, { onDelete: "cascade" }),
    tagId: text("tag_id")
      .notNull()
      .references(() => tags.id, { onDelete: "cascade" }),
    ...tenantColumns(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.contactId, t.tagId] }), index("contact_tags_tag_idx").on(t.tagId)],
);

export const customFields = pgTable(
  "custom_fields",
  {
    id: text("id").primaryKey(),
    ...tenantColumns(),
    name: text("name").notNull(),
    key: text("key").notNull(),
    scope: text("scope", { enum: ["contact", "organization"] }).notNull(),
    /** Only organization-scoped fields hold a value here; contact values live on the contact. */
    value: text("value"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("custom_fields_list_idx").on(
      t.organizationId,
      t.environment,
      t.createdAt.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
    uniqueIndex("custom_fields_key_key").on(t.organizationId, t.environment, t.key),
  ],
);
