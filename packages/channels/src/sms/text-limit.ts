import { VONAGE_SMS_MAX_TEXT } from "./vonage/adapter.js";

/** Twilio's limit of a message's `Body`. */
const TWILIO_SMS_MAX_TEXT = 1600;

/**
 * The longest text (or MMS caption) each SMS provider takes, in UTF-16 code units (a
 * JavaScript string's length: an emoji counts two), which is how Twilio counts the 1,600
 * characters of a message's `Body`. Vonage's Messages API takes 1,000 characters of `text`.
 * The sandbox holds to Twilio's. Longer is refused at send with 422 before anything is stored.
 */
const SMS_TEXT_LIMITS: Record<string, number> = {
  sandbox: TWILIO_SMS_MAX_TEXT,
  twilio: TWILIO_SMS_MAX_TEXT,
  vonage: VONAGE_SMS_MAX_TEXT,
};

const DEFAULT_SMS_TEXT_LIMIT = TWILIO_SMS_MAX_TEXT;

export function smsTextLimit(provider: string): number {
  return SMS_TEXT_LIMITS[provider] ?? DEFAULT_SMS_TEXT_LIMIT;
}
