import { sql } from "drizzle-orm";
import { index, pgTable, text, uniqueIndex } from "drizzle-orm/pg-core";
import { createdAt, environmentEnum, timestampMs, updatedAt } from "./columns.js";

export const organizations = pgTable("organizations", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  createdAt: createdAt(),
});

export const apiKeys = pgTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    environment: environmentEnum("environment").notNull(),
    /** SHA-256 of the whole key, hex. The key itself is never stored. */
    secretHash: text("secret_hash").notNull(),
    /** The last four characters, so a person can tell keys apart in `list-keys`. */
    lastFour: text("last_four").notNull(),
    scopes: text("scopes").array().notNull(),
    createdAt: createdAt(),
    revokedAt: timestampMs("revoked_at"),
  },
  (t) => [
    uniqueIndex("api_keys_secret_hash_key").on(t.secretHash),
    index("api_keys_organization_idx").on(t.organizationId),
  ],
);

/** Agents belong to the organization as a whole: the same people work in live and in test. */
export const users = pgTable(
  "users",
  {
    id: text("id").primaryKey(),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    email: text("email").notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex("users_organization_email_key").on(t.organizationId, sql`lower(${t.email})`)],
);
