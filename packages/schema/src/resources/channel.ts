import { z } from "zod";
import { timestamp } from "../primitives.js";

export const channelTypes = ["whatsapp", "instagram", "messenger", "email", "webchat", "sms"] as const;
export type ChannelType = (typeof channelTypes)[number];
export const channelType = z.enum(channelTypes);

export const messageTypes = ["text", "image", "video", "audio", "document", "template"] as const;
export type MessageType = (typeof messageTypes)[number];

export const capabilities = z.object({
  message_types: z
    .array(z.enum(messageTypes))
    .describe(
      "The message types this channel can carry; `template` is never among them. An `sms` channel carries `image` only when its number can send MMS",
    ),
  delivery_receipts: z.boolean().describe("The channel confirms arrival (`delivered`)"),
  read_receipts: z.boolean().describe("The channel reports reading (`read`)"),
  session_window: z
    .object({ hours: z.number().int() })
    .nullable()
    .describe("Free messages only this long after the contact's last message; null when unlimited"),
});
export type Capabilities = z.infer<typeof capabilities>;

export const channelStatuses = ["active", "needs_attention", "disconnected"] as const;
export type ChannelStatus = (typeof channelStatuses)[number];

export const channel = z.object({
  object: z.literal("channel"),
  id: z.string(),
  type: channelType,
  name: z.string(),
  environment: z.enum(["live", "test"]),
  sandbox: z.boolean().describe("A test-environment channel that sends to nobody"),
  provider: z
    .string()
    .describe(
      "Who carries the channel's messages: `sandbox` (test environment, sends to nobody), `meta` (WhatsApp, Messenger, Instagram), `smtp` (email), `webchat` (Parley's widget), `twilio` or `vonage` (SMS)",
    ),
  capabilities,
  status: z
    .enum(channelStatuses)
    .describe(
      "`active`; `needs_attention` when the provider refused the channel's credentials (an expired Meta token), until they are updated; `disconnected`: sends are refused and nothing is received until it is reconnected",
    ),
  status_reason: z.string().nullable().describe("Why the channel is not `active`; null when it is"),
  created_at: timestamp,
  updated_at: timestamp,
});
export type Channel = z.infer<typeof channel>;
