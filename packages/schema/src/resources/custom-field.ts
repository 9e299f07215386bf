import { z } from "zod";
import { timestamp } from "../primitives.js";

export const customFieldScope = z.enum(["contact", "organization"]);

export const customField = z.object({
  object: z.literal("custom_field"),
  id: z.string(),
  name: z.string(),
  key: z.string().describe("Generated from the name unless given; immutable; the key inside `contact.custom_fields`"),
  scope: customFieldScope,
  value: z
    .string()
    .nullable()
    .describe("The organization-wide value of an `organization` field; null for `contact` fields"),
  created_at: timestamp,
  updated_at: timestamp,
});
export type CustomField = z.infer<typeof customField>;

export const customFieldKeyPattern = /^[a-z][a-z0-9_]{0,63}$/;

export const customFieldCreateBody = z.strictObject({
  name: z.string().trim().min(1).max(80),
  key: z
    .string()
    .regex(customFieldKeyPattern, "must be lower-case letters, digits and underscores, starting with a letter")
    .optional(),
  scope: customFieldScope.default("contact"),
  value: z.string().max(500).optional().describe("Only for `organization` fields"),
});

/** The key and the scope are fixed at creation: contacts hold values under the key. */
export const customFieldUpdateBody = z.strictObject({
  name: z.string().trim().min(1).max(80).optional(),
  value: z.string().max(500).nullable().optional().describe("Only for `organization` fields; null clears it"),
});
