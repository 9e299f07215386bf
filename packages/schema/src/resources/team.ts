import { z } from "zod";
import { prefixedId, timestamp } from "../primitives.js";

export const user = z.object({
  object: z.literal("user"),
  id: z.string(),
  name: z.string(),
  email: z.string(),
  created_at: timestamp,
  updated_at: timestamp,
});
export type User = z.infer<typeof user>;

export const team = z.object({
  object: z.literal("team"),
  id: z.string(),
  name: z.string(),
  created_at: timestamp,
  updated_at: timestamp,
});
export type Team = z.infer<typeof team>;

export const teamCreateBody = z.strictObject({ name: z.string().trim().min(1).max(80) });
export const teamUpdateBody = z.strictObject({ name: z.string().trim().min(1).max(80).optional() });
export const teamMemberAddBody = z.strictObject({ user_id: prefixedId("usr") });
