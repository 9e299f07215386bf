import { z } from "zod";
import { prefixedId, timestamp } from "../primitives.js";
import { MAX_MESSAGE_TEXT, messageDirection, messageStatuses, messageType } from "./message.js";

/** The web chat widget's own endpoints, authenticated by a visitor token instead of an API key. */
export const webchatSession = z.object({
  object: z.literal("webchat_session"),
  id: z.string(),
  channel_id: z.string(),
  token: z.string().describe("The visitor's bearer token; shown only when the session is created"),
  created_at: timestamp,
});
export type WebchatSession = z.infer<typeof webchatSession>;

export const webchatSessionCreateBody = z.strictObject({
  name: z.string().min(1).max(160).optional(),
  email: z.email().max(254).optional(),
});

/** What widget.js needs from the channel before it draws the bubble; a page's data attributes win. */
export const webchatLauncher = z.object({
  object: z.literal("webchat_launcher"),
  channel_id: z.string(),
  color: z.string().nullable().describe("The bubble's colour (`#rgb` or `#rrggbb`), or null for Parley's default"),
  position: z.enum(["right", "left"]).describe("The corner of the page the bubble sits in"),
});
export type WebchatLauncher = z.infer<typeof webchatLauncher>;

export const webchatMessageBody = z.strictObject({ text: z.string().min(1).max(MAX_MESSAGE_TEXT) });

export const webchatReceiptBody = z.strictObject({
  message_id: prefixedId("msg"),
  status: z.enum(["delivered", "read"]),
});

/**
 * A message as the visitor sees it: never the business's `metadata`, the conversation's
 * ids or a provider's error details, which the API's `message` carries.
 */
export const webchatMessage = z.object({
  id: z.string(),
  direction: messageDirection,
  type: messageType,
  text: z.string().nullable(),
  status: z.enum(messageStatuses).nullable(),
  agent_name: z
    .string()
    .nullable()
    .optional()
    .describe("On the business's replies: the name of the agent the conversation is assigned to, if any"),
  created_at: timestamp,
});
export type WebchatMessage = z.infer<typeof webchatMessage>;
