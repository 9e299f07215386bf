import { jsonb, pgEnum, text, timestamp } from "drizzle-orm/pg-core";

export const environmentEnum = pgEnum("environment", ["live", "test"]);

/** Millisecond precision, so a cursor built from a JS Date matches the stored value exactly. */
export const timestampMs = (name: string) => timestamp(name, { precision: 3, withTimezone: true, mode: "date" });

export const createdAt = () => timestampMs("created_at").notNull().defaultNow();
export const updatedAt = () => timestampMs("updated_at").notNull().defaultNow();

/** Every tenant row carries its organization and environment; every query filters on both. */
export const tenantColumns = () => ({
  organizationId: text("organization_id").notNull(),
  environment: environmentEnum("environment").notNull(),
});

export const jsonObject = (name: string) => jsonb(name).$type<Record<string, unknown>>().notNull().default({});
