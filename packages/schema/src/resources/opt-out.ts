import { z } from "zod";
import { timestamp } from "../primitives.js";

export const optOut = z
  .object({
    object: z.literal("opt_out"),
    id: z.string(),
    contact_id: z.string(),
    channel_id: z.string().describe("The `sms` channel the contact asked not to be texted from"),
    keyword: z
      .string()
      .describe("What the contact sent: `STOP`, `UNSUBSCRIBE`, `CANCEL`... (or the provider's verdict, `STOP`)"),
    created_at: timestamp.describe("When the contact opted out"),
  })
  .describe(
    "A contact who texted a stop word to an `sms` channel: messages to them on it fail (Twilio 21610) until they text `START`, which removes it. Erased with the contact.",
  );
export type OptOut = z.infer<typeof optOut>;
