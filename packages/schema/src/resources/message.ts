import { z } from "zod";
import { metadata, prefixedId, timestamp } from "../primitives.js";
import { attachment } from "./attachment.js";
import { messageTypes } from "./channel.js";

export const messageStatuses = ["queued", "sent", "delivered", "read", "failed"] as const;
export type MessageStatus = (typeof messageStatuses)[number];
export const messageDirection = z.enum(["inbound", "outbound"]);
export const messageType = z.enum(messageTypes);

export const MAX_MESSAGE_TEXT = 4096;

export const emailAuthentication = z
  .object({
    verified: z
      .boolean()
      .describe(
        "True when DMARC passed: SPF or DKIM passed for a domain aligned with the `From:` address. An unverified mail never joins an existing contact's conversation",
      ),
    dmarc: z
      .string()
      .describe("The DMARC result: `pass`, `fail`, `none` (the domain publishes no policy), `temperror`..."),
    spf: z.string().describe("The SPF result for the SMTP envelope; `none` for mail posted over HTTP"),
    dkim: z
      .string()
      .describe("`pass` when a DKIM signature verified, else the first signature's result (`none`: unsigned)"),
    evaluated_by: z
      .string()
      .describe("`parley`, or the authserv-id of the relay whose Authentication-Results Parley trusts"),
  })
  .describe("Inbound email only: who sent it, as far as SPF, DKIM and DMARC tell");
export type EmailAuthentication = z.infer<typeof emailAuthentication>;

export const smsEncodings = ["GSM-7", "UCS-2"] as const;

export const smsSegments = z
  .object({
    segments: z
      .number()
      .int()
      .describe(
        "The parts carriers send the text in, as providers bill it: one part holds 160 GSM-7 characters or 70 UCS-2 units; a longer text travels in parts of 153 or 67",
      ),
    encoding: z
      .enum(smsEncodings)
      .describe(
        "`GSM-7` when every character is in the GSM 03.38 alphabet (its extension characters, such as `€ [ ] { }`, count twice); otherwise `UCS-2`, in UTF-16 units (an emoji counts two)",
      ),
  })
  .describe("An outbound text on an `sms` channel: how carriers count it; null on other channels and for MMS");
export type SmsSegments = z.infer<typeof smsSegments>;

export const message = z.object({
  object: z.literal("message"),
  id: z.string(),
  conversation_id: z.string(),
  direction: messageDirection,
  type: messageType,
  text: z.string().nullable().describe("Body text, or the caption of a media message"),
  attachment: attachment.nullable().describe("On media messages: the file, with the absolute `url` of its content"),
  metadata,
  status: z
    .enum(messageStatuses)
    .nullable()
    .describe("Null for inbound messages and on conversations whose transport gives no receipts"),
  error: z
    .object({ code: z.string(), message: z.string() })
    .nullable()
    .describe("When `failed`: the channel provider's own code and message, untranslated"),
  authentication: emailAuthentication.nullable().describe("Inbound email: the sender's authentication; null otherwise"),
  sms: smsSegments.nullable(),
  created_at: timestamp,
  updated_at: timestamp,
});
export type Message = z.infer<typeof message>;

export const messageSendBody = z.strictObject({
  conversation_id: prefixedId("conv"),
  type: messageType,
  text: z.string().min(1).max(MAX_MESSAGE_TEXT).optional().describe("Required for `text`; the caption of media"),
  metadata: metadata.optional(),
  attachment_id: prefixedId("att").optional().describe("Required for media types: the id returned by POST /uploads"),
  template: z
    .record(z.string(), z.unknown())
    .optional()
    .describe("Accepted by the schema; `template` messages are always refused"),
});
