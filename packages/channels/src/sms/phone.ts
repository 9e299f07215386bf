import { type CountryCode, isSupportedCountry, parsePhoneNumberFromString } from "libphonenumber-js";

/** Where a number written without `+` and a country code is taken to be, unless the channel says (`default_region`). */
export const DEFAULT_PHONE_REGION = "US";

/**
 * A phone number as people type it (`(415) 555-0100`, `+44 7700 900123`, `0044 7700 900123`)
 * in E.164 (`+14155550100`), or null when it cannot be one. A number without its country
 * code is read as a number of `defaultRegion` (ISO 3166-1 alpha-2, `US` by default).
 *
 * The test is libphonenumber-js's `isPossible` (a length the country's numbers have), not
 * `isValid` (a range its metadata knows is allocated): ranges kept for drama and tests, such
 * as the UK's 07700 900xxx, and ranges allocated after the metadata was published are real
 * destinations to a provider, which has the last word on a number.
 */
export function normalizePhone(input: string, defaultRegion: string = DEFAULT_PHONE_REGION): string | null {
  const region = regionOrDefault(defaultRegion);
  const parsed = parsePhoneNumberFromString(input, { defaultCountry: region });
  if (!parsed?.isPossible()) return null;
  return parsed.number;
}

/**
 * The digit strings a stored phone may hold when it is written as this E.164 number: the
 * number itself, with `00` in front, and its national forms (with and without the trunk
 * prefix). Inbound SMS narrows the contacts to these (an index on the phone's digits), then
 * normalises each candidate to be sure (`normalizePhone`).
 */
export function phoneDigitForms(e164: string): string[] {
  const parsed = parsePhoneNumberFromString(e164);
  const international = e164.replace(/\D/g, "");
  if (!parsed) return [international];
  const forms = [
    international,
    `00${international}`,
    parsed.nationalNumber,
    parsed.formatNational().replace(/\D/g, ""),
  ];
  return [...new Set(forms)];
}

function regionOrDefault(region: string): CountryCode {
  const upper = region.toUpperCase();
  return isSupportedCountry(upper) ? upper : DEFAULT_PHONE_REGION;
}
