import { parsePhoneNumberFromString } from "libphonenumber-js";

/**
 * Phone numbers as Vonage writes them and as Parley keeps them. Vonage takes and gives
 * numbers in E.164 without the leading `+` (`447700900000`); Parley's contacts and events
 * carry `+447700900000`. libphonenumber-js judges whether digits can be a number at all
 * (`isPossible`: the length for the country code), not whether the range is allocated:
 * Vonage, which knows its routes, refuses what it cannot deliver.
 */

/**
 * A number a person typed (`+44 7700 900000`, `0044 7700 900000`, `447700900000`) as
 * Vonage's digits; null when it is not a possible international number. A number without
 * `+` or `00` is read as already international (country code first), as WhatsApp ids and
 * Vonage's own webhooks write them: there is no country to guess a national number from.
 */
export function toVonageNumber(value: string): string | null {
  const trimmed = value.trim();
  if (!/^(\+|00)?[\d\s().-]+$/.test(trimmed)) return null;
  const digits = trimmed.replace(/\D/g, "");
  // `00` is the international prefix of most countries: `0044...` is `+44...`.
  const international = trimmed.startsWith("00") ? digits.slice(2) : digits;
  const parsed = parsePhoneNumberFromString(`+${international}`);
  return parsed?.isPossible() ? parsed.number.slice(1) : null;
}

/**
 * A number from Vonage (`447700900000`) as E.164 (`+447700900000`). Anything else Vonage
 * may put in `from`/`to` (an alphanumeric sender id, a short code) is returned unchanged:
 * it is not a phone number and must not pretend to be one.
 */
export function fromVonageNumber(value: string): string {
  if (!/^\d+$/.test(value)) return value;
  const parsed = parsePhoneNumberFromString(`+${value}`);
  return parsed?.isPossible() ? `+${value}` : value;
}

/**
 * Whether Vonage's digits are a number of the North American Numbering Plan (+1: US,
 * Canada...); a short code (`12345`) is not, though it starts with 1.
 */
export function isNanpNumber(digits: string): boolean {
  if (!/^\d+$/.test(digits)) return false;
  const parsed = parsePhoneNumberFromString(`+${digits}`);
  return parsed?.isPossible() === true && parsed.countryCallingCode === "1";
}
