import { providerError } from "../sandbox/provider-errors.js";

/**
 * How each SMS provider refuses a message to a number that opted out, in its own words:
 * Twilio answers the send with 21610; Vonage accepts it and reports it failed with
 * err-code 9 in the delivery receipt (SMS API). The sandbox answers as Twilio does.
 */
const TWILIO_OPT_OUT = providerError("21610");

export const SMS_OPT_OUT_REFUSALS: Record<string, { code: string; message: string }> = {
  sandbox: TWILIO_OPT_OUT,
  twilio: TWILIO_OPT_OUT,
  vonage: { code: "9", message: "The recipient has asked not to receive messages from this number" },
};

/**
 * Why an SMS to a contact who opted out on the channel (STOP) fails, on `provider`'s
 * channels (Twilio's words where a provider has none of its own). The worker fails such a
 * message with it before any adapter is asked, as a message outside WhatsApp's window
 * fails with 131047 before Meta is: the provider is never called.
 */
export function smsOptOutRefusal(provider: string): { code: string; message: string } {
  return { ...(SMS_OPT_OUT_REFUSALS[provider] ?? TWILIO_OPT_OUT) };
}
