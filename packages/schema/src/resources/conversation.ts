import { z } from "zod";
import { metadata, prefixedId, timestamp } from "../primitives.js";
import { channelType } from "./channel.js";

export const conversationStatus = z.enum(["open", "pending", "closed"]);
export type ConversationStatus = z.infer<typeof conversationStatus>;

export const conversation = z.object({
  object: z.literal("conversation"),
  id: z.string(),
  status: conversationStatus,
  contact_id: z.string(),
  channel_id: z.string().nullable().describe("Null for a manual record: messages are stored, never delivered"),
  channel_type: channelType.nullable(),
  external_id: z.string().nullable(),
  assigned_to: z.string().nullable().describe("The `usr_` id of the assigned agent"),
  team_id: z.string().nullable(),
  metadata,
  unverified: z
    .boolean()
    .describe(
      "Started by an email whose sender was not authenticated (DMARC did not pass): its contact is not matched to an existing one, and only unverified mail from the same address joins it",
    ),
  closed_at: timestamp.nullable(),
  created_at: timestamp,
  updated_at: timestamp,
});
export type Conversation = z.infer<typeof conversation>;

const externalId = z
  .string()
  .min(1)
  .max(120)
  .describe("Your own identifier; creating with a known one returns that conversation");

export const conversationCreateBody = z.strictObject({
  contact_id: prefixedId("cnt"),
  channel_id: prefixedId("chn").optional().describe("Without it the conversation is a manual record"),
  external_id: externalId.optional(),
  metadata: metadata.optional(),
});

export const conversationUpdateBody = z.strictObject({
  status: conversationStatus.optional(),
  external_id: externalId.nullable().optional(),
  metadata: metadata.optional().describe("Replaces the whole metadata object"),
  team_id: prefixedId("team")
    .nullable()
    .optional()
    .describe("Moves the conversation to this team; null removes the team (`unassign` removes only the agent)"),
});

export const conversationAssignBody = z
  .strictObject({
    user_id: prefixedId("usr").optional(),
    team_id: prefixedId("team").optional(),
  })
  .refine((body) => body.user_id !== undefined || body.team_id !== undefined, {
    message: "give user_id, team_id or both",
    path: ["user_id"],
  });

export const conversationTagBody = z.strictObject({ tag_id: prefixedId("tag") });

/** How long one typing signal shows; an agent still typing repeats it sooner. */
export const TYPING_SECONDS = 5;

export const typingBody = z.strictObject({
  typing: z
    .boolean()
    .default(true)
    .describe(`\`true\` (the default): an agent is typing, shown for ${TYPING_SECONDS} seconds; \`false\`: stopped`),
});

export const typingIndicator = z.object({
  object: z.literal("typing_indicator"),
  conversation_id: z.string(),
  typing: z.boolean(),
  expires_at: timestamp.nullable().describe("When the visitor's typing dots go, unless repeated; null when stopped"),
});
export type TypingIndicator = z.infer<typeof typingIndicator>;

export const note = z.object({
  object: z.literal("note"),
  id: z.string(),
  conversation_id: z.string(),
  body: z.string(),
  author_key_id: z
    .string()
    .nullable()
    .describe(
      "The API key that wrote the note (compare `GET /api-keys/current`); only that key may change or delete it. Null for notes written before authors were recorded.",
    ),
  created_at: timestamp,
  updated_at: timestamp,
});
export type Note = z.infer<typeof note>;

/** Kept exactly as written (indentation and line breaks count), but never blank. */
const noteText = z
  .string()
  .min(1)
  .max(10_000)
  .refine((body) => body.trim().length > 0, "must not be blank");

export const noteCreateBody = z.strictObject({ body: noteText });
export const noteUpdateBody = z.strictObject({ body: noteText.optional() });
