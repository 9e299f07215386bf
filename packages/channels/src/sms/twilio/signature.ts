import { createHmac, timingSafeEqual } from "node:crypto";

/** A form-encoded webhook body, decoded: a repeated name carries its values as an array. */
export type TwilioParams = Readonly<Record<string, string | readonly string[]>>;

/**
 * The `X-Twilio-Signature` of a form POST, as Twilio documents it
 * (https://www.twilio.com/docs/usage/webhooks/webhooks-security): the full URL Twilio
 * requested (scheme, host, path and query, exactly as configured), then each POST
 * parameter's name and value appended with no delimiter, in name order (case-sensitive
 * code-unit order); HMAC-SHA1 keyed with the account's Auth Token; base64. A name given
 * more than once appends each distinct value once, values sorted, as Twilio's own SDKs do
 * (their test vector: `Digits=5678&Digits=1234&Digits=1234` signs `Digits1234Digits5678`).
 * Values are the decoded ones (`+14155550100`, not `%2B14155550100`).
 */
export function computeTwilioSignature(authToken: string, url: string, params: TwilioParams = {}): string {
  let data = url;
  for (const name of Object.keys(params).sort()) {
    const value = params[name];
    const values = typeof value === "string" ? [value] : [...new Set(value)].sort();
    for (const each of values) data += name + each;
  }
  return createHmac("sha1", authToken).update(data, "utf8").digest("base64");
}

/**
 * Whether `header` is Twilio's signature of this URL and these parameters, compared in
 * constant time. Like Twilio's SDKs, the URL is also tried with its default port written
 * out (`:443`) or left out, as Twilio may have signed either. A missing or empty header, or
 * an empty token, is simply not a valid signature.
 */
export function verifyTwilioSignature(
  authToken: string,
  url: string,
  params: TwilioParams,
  header: string | string[] | undefined | null,
): boolean {
  const given = typeof header === "string" ? header.trim() : undefined;
  if (!given || authToken.length === 0) return false;
  const provided = Buffer.from(given, "utf8");
  // Every candidate is checked, so the time taken does not say which one matched.
  let valid = false;
  for (const candidate of urlVariants(url)) {
    const expected = Buffer.from(computeTwilioSignature(authToken, candidate, params), "utf8");
    if (expected.length === provided.length && timingSafeEqual(expected, provided)) valid = true;
  }
  return valid;
}

/** The URL as given, then with its scheme's default port added or removed. */
function urlVariants(url: string): string[] {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [url];
  }
  const defaultPort = parsed.protocol === "https:" ? "443" : parsed.protocol === "http:" ? "80" : null;
  if (defaultPort === null) return [url];
  const authority = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)(.*)$/i.exec(url);
  if (!authority?.[1] || authority[2] === undefined) return [url];
  const [, scheme, host, rest = ""] = authority;
  const withPort = host.endsWith(`:${defaultPort}`) ? null : /:\d+$/.test(host) ? null : `${host}:${defaultPort}`;
  const withoutPort = host.endsWith(`:${defaultPort}`) ? host.slice(0, -(defaultPort.length + 1)) : null;
  const variants = [url];
  if (withPort) variants.push(`${scheme}${withPort}${rest}`);
  if (withoutPort) variants.push(`${scheme}${withoutPort}${rest}`);
  return variants;
}
