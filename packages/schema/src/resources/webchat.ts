import { z } from "zod";
import { prefixedId, timestamp } from "../primitives.js";
import { MAX_MESSAGE_TEXT } from "./message.js";

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

export const webchatMessageBody = z.strictObject({ text: z.string().min(1).max(MAX_MESSAGE_TEXT) });

export const webchatReceiptBody = z.strictObject({
  message_id: prefixedId("msg"),
  status: z.enum(["delivered", "read"]),
});
