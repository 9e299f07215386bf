import { createHmac, timingSafeEqual } from "node:crypto";

const HEADER = /^sha256=([0-9a-f]{64})$/i;

/**
 * The `X-Hub-Signature-256` value Meta sends with a webhook: an HMAC-SHA256 of the raw
 * request body keyed with the app secret, as `sha256=<hex>`.
 */
export function signMetaPayload(rawBody: Buffer | string, appSecret: string): string {
  return `sha256=${createHmac("sha256", appSecret).update(rawBody).digest("hex")}`;
}

/** Whether `header` has the shape of a signature at all: `sha256=` and 64 hex digits. */
export function isMetaSignatureHeader(header: string | undefined): boolean {
  return typeof header === "string" && HEADER.test(header.trim());
}

/**
 * Whether `header` is Meta's signature of exactly these bytes. Computed over the raw body
 * (re-serialized JSON would differ in escaping) and compared in constant time; a missing or
 * malformed header is simply not a valid signature.
 */
export function verifyMetaSignature(rawBody: Buffer, header: string | undefined, appSecret: string): boolean {
  const hex = typeof header === "string" ? HEADER.exec(header.trim())?.[1] : undefined;
  if (!hex || appSecret.length === 0) return false;
  const expected = createHmac("sha256", appSecret).update(rawBody).digest();
  return timingSafeEqual(Buffer.from(hex, "hex"), expected);
}
