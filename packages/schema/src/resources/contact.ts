import { z } from "zod";
import { metadata, prefixedId, timestamp } from "../primitives.js";

export const contactLimits = {
  name: { min: 1, max: 160 },
  firstName: 80,
  lastName: 120,
  email: 254,
  phone: { min: 8, max: 32 },
  externalId: { min: 1, max: 120 },
  avatarUrl: 500,
  tags: 50,
  customFieldValue: 500,
} as const;

export const contact = z.object({
  object: z.literal("contact"),
  id: z.string(),
  name: z.string().nullable(),
  first_name: z.string().nullable(),
  last_name: z.string().nullable(),
  email: z.string().nullable(),
  phone: z.string().nullable(),
  external_id: z.string().nullable(),
  avatar_url: z.string().nullable(),
  tags: z.array(z.string()).describe("Ids of the tags on this contact"),
  custom_fields: z.record(z.string(), z.string()).describe("Values by custom-field key"),
  metadata,
  created_at: timestamp,
  updated_at: timestamp,
});
export type Contact = z.infer<typeof contact>;

const fields = {
  name: z.string().min(contactLimits.name.min).max(contactLimits.name.max),
  first_name: z.string().max(contactLimits.firstName),
  last_name: z.string().max(contactLimits.lastName),
  email: z.email().max(contactLimits.email),
  phone: z.string().min(contactLimits.phone.min).max(contactLimits.phone.max),
  external_id: z
    .string()
    .min(contactLimits.externalId.min)
    .max(contactLimits.externalId.max)
    .describe("Your own identifier; creating with a known one returns that contact"),
  avatar_url: z.url().max(contactLimits.avatarUrl),
  tags: z
    .array(prefixedId("tag"))
    .max(contactLimits.tags)
    .describe("Tag ids; on update the array replaces the current tags"),
};

export const contactCreateBody = z.strictObject({
  name: fields.name.optional(),
  first_name: fields.first_name.optional(),
  last_name: fields.last_name.optional(),
  email: fields.email.optional(),
  phone: fields.phone.optional(),
  external_id: fields.external_id.optional(),
  avatar_url: fields.avatar_url.optional(),
  tags: fields.tags.optional(),
  custom_fields: z
    .record(z.string(), z.string().max(contactLimits.customFieldValue))
    .optional()
    .describe("Values by custom-field key; the keys must be contact custom fields"),
  metadata: metadata.optional(),
});

export const contactUpdateBody = z.strictObject({
  name: fields.name.optional(),
  first_name: fields.first_name.nullable().optional(),
  last_name: fields.last_name.nullable().optional(),
  email: fields.email.nullable().optional(),
  phone: fields.phone.nullable().optional(),
  external_id: fields.external_id.nullable().optional(),
  avatar_url: fields.avatar_url.nullable().optional(),
  tags: fields.tags.optional(),
  custom_fields: z
    .record(z.string(), z.string().max(contactLimits.customFieldValue).nullable())
    .optional()
    .describe("A null value clears that field; an absent key is left unchanged"),
  metadata: metadata.optional().describe("Replaces the whole metadata object"),
});
