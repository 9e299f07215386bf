import { createHmac, timingSafeEqual } from "node:crypto";

/** Stripe's scheme: `X-Parley-Signature: t=<unix seconds>,v1=<hex HMAC-SHA-256 of "<t>.<raw body>">`. */
export const SIGNATURE_HEADER = "x-parley-signature";
export const DEFAULT_TOLERANCE_SECONDS = 300;

export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
}

export function computeSignature(secret: string, timestamp: number, rawBody: string | Uint8Array): string {
  const body = typeof rawBody === "string" ? rawBody : Buffer.from(rawBody).toString("utf8");
  return createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex");
}

export interface VerifyOptions {
  /** Seconds a signature stays acceptable; defaults to 300. */
  toleranceSeconds?: number;
  /** For tests: the current time in unix seconds. */
  now?: number;
}

/**
 * Verifies a webhook against the endpoint's secret and returns the parsed event.
 * Pass the raw body exactly as received: re-serialised JSON does not verify.
 */
export function verifyWebhook<T = unknown>(
  rawBody: string | Uint8Array,
  signatureHeader: string | undefined | null,
  secret: string,
  options: VerifyOptions = {},
): T {
  if (!signatureHeader) throw new WebhookVerificationError("Missing X-Parley-Signature header");
  const parts = signatureHeader.split(",").map((part) => part.trim().split("="));
  const timestamp = Number(parts.find(([name]) => name === "t")?.[1]);
  const signatures = parts.filter(([name]) => name === "v1").map(([, value]) => value ?? "");
  if (!Number.isInteger(timestamp) || signatures.length === 0) {
    throw new WebhookVerificationError("Malformed X-Parley-Signature header");
  }
  const now = options.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > (options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) {
    throw new WebhookVerificationError("Signature timestamp is outside the tolerance");
  }
  const expected = Buffer.from(computeSignature(secret, timestamp, rawBody), "hex");
  const matches = signatures.some((signature) => {
    const given = Buffer.from(signature, "hex");
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!matches) throw new WebhookVerificationError("No signature matches the expected signature");
  const body = typeof rawBody === "string" ? rawBody : Buffer.from(rawBody).toString("utf8");
  return JSON.parse(body) as T;
}
