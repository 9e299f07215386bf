import { isSupportedCountry } from "libphonenumber-js";
import { z } from "zod";
import { DEFAULT_PHONE_REGION } from "./phone.js";

/** `true`/`false`, as JSON gives them or as `pnpm admin ... --setting mms=true` does (a string). */
const flag = z.union([z.boolean(), z.enum(["true", "false"]).transform((value) => value === "true")]);

/**
 * What every SMS channel has, whatever its provider (the sandbox's too): the live
 * providers' settings extend these with their credentials and number.
 */
export const smsChannelSettings = z.object({
  /** The number can send MMS (Twilio: US and Canadian numbers): the channel then carries `image`. */
  mms: flag.default(false),
  /** Where a contact's phone written without a country code is (ISO 3166-1 alpha-2). */
  default_region: z
    .string()
    .trim()
    .toUpperCase()
    .refine(isSupportedCountry, "must be an ISO 3166-1 alpha-2 country code, such as US or GB")
    .default(DEFAULT_PHONE_REGION),
});
export type SmsChannelSettings = z.infer<typeof smsChannelSettings>;

/** A stored channel's SMS settings: anything unreadable falls back to the defaults (text only, US). */
export function smsSettingsOf(stored: unknown): SmsChannelSettings {
  const parsed = smsChannelSettings.safeParse(stored ?? {});
  return parsed.success ? parsed.data : smsChannelSettings.parse({});
}
