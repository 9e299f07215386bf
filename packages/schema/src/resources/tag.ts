import { z } from "zod";
import { timestamp } from "../primitives.js";

export const tag = z.object({
  object: z.literal("tag"),
  id: z.string(),
  name: z.string(),
  color: z.string().nullable(),
  created_at: timestamp,
  updated_at: timestamp,
});
export type Tag = z.infer<typeof tag>;

const name = z.string().trim().min(1).max(50).describe("Unique within the environment, case-insensitively");
const color = z
  .string()
  .regex(/^#[0-9a-fA-F]{6}$/, "must be a hex colour like #1A2B3C")
  .describe("Hex colour, `#RRGGBB`");

export const tagCreateBody = z.strictObject({ name, color: color.nullable().optional() });
export const tagUpdateBody = z.strictObject({ name: name.optional(), color: color.nullable().optional() });
