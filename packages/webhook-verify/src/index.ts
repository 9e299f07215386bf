/**
 * Verifies Parley webhooks. Zero dependencies and Web Crypto only, so it runs unchanged
 * in Node 18+, Deno, Bun, Cloudflare Workers and browsers.
 *
 * Scheme (Stripe's): `X-Parley-Signature: t=<unix seconds>,v1=<hex HMAC-SHA-256>` over
 * the string `<t>.<raw body>`, keyed with the endpoint's full `whsec_...` secret. During a
 * secret rotation several `v1` entries appear; any one matching is enough.
 */
import type { ParleyEvent } from "./events.generated.js";

// Every webhook body's type, generated from the catalogue (`pnpm run docs`): `ParleyEvent`
// is their union, discriminated by `type`, each with its typed `data`.
export type * from "./events.generated.js";

export const SIGNATURE_HEADER = "x-parley-signature";
export const DEFAULT_TOLERANCE_SECONDS = 300;

export interface VerifyOptions {
  /** Seconds a signature's timestamp may differ from now; 300 by default. */
  tolerance?: number;
  /** The current time in unix seconds (tests). */
  now?: number;
}

export class WebhookSignatureError extends Error {
  override name = "WebhookSignatureError";
}
export class MissingSignatureError extends WebhookSignatureError {
  override name = "MissingSignatureError";
}
export class MalformedSignatureError extends WebhookSignatureError {
  override name = "MalformedSignatureError";
}
export class TimestampOutsideToleranceError extends WebhookSignatureError {
  override name = "TimestampOutsideToleranceError";
}
export class NoMatchingSignatureError extends WebhookSignatureError {
  override name = "NoMatchingSignatureError";
}

const encoder = new TextEncoder();

function toBytes(body: string | Uint8Array): Uint8Array {
  return typeof body === "string" ? encoder.encode(body) : body;
}

function hexToBytes(hex: string): Uint8Array | undefined {
  if (hex.length === 0 || hex.length % 2 !== 0 || !/^[0-9a-fA-F]+$/.test(hex)) return undefined;
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

function parseHeader(header: string): { timestamp: number; signatures: string[] } {
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(",")) {
    const separator = part.indexOf("=");
    if (separator < 0) continue;
    const name = part.slice(0, separator).trim();
    const value = part.slice(separator + 1).trim();
    if (name === "t" && /^\d+$/.test(value)) timestamp = Number(value);
    if (name === "v1") signatures.push(value);
  }
  if (timestamp === undefined || signatures.length === 0) {
    throw new MalformedSignatureError("The X-Parley-Signature header needs t=<unix seconds> and at least one v1=<hex>");
  }
  return { timestamp, signatures };
}

function signedPayload(timestamp: number, body: Uint8Array): Uint8Array {
  const prefix = encoder.encode(`${timestamp}.`);
  const payload = new Uint8Array(prefix.length + body.length);
  payload.set(prefix);
  payload.set(body, prefix.length);
  return payload;
}

/**
 * Resolves when one `v1` signature of the header is the HMAC of `<t>.<raw body>` with
 * `secret` and `t` is within the tolerance; rejects with a `WebhookSignatureError`
 * subclass otherwise. Pass the raw body as received: re-serialised JSON does not verify.
 */
export async function verifySignature(
  rawBody: string | Uint8Array,
  signatureHeader: string | null | undefined,
  secret: string,
  options: VerifyOptions = {},
): Promise<void> {
  if (!signatureHeader) throw new MissingSignatureError("The request has no X-Parley-Signature header");
  const { timestamp, signatures } = parseHeader(signatureHeader);
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const tolerance = options.tolerance ?? DEFAULT_TOLERANCE_SECONDS;
  if (Math.abs(now - timestamp) > tolerance) {
    throw new TimestampOutsideToleranceError(`The signature's timestamp is more than ${tolerance} s from now`);
  }
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "verify",
  ]);
  const payload = signedPayload(timestamp, toBytes(rawBody));
  for (const signature of signatures) {
    const bytes = hexToBytes(signature);
    // crypto.subtle.verify compares in constant time.
    if (bytes && (await crypto.subtle.verify("HMAC", key, bytes, payload))) return;
  }
  throw new NoMatchingSignatureError("No signature of the X-Parley-Signature header matches this secret and body");
}

/** Verifies, then parses the body into the event envelope. */
export async function constructEvent(
  rawBody: string | Uint8Array,
  signatureHeader: string | null | undefined,
  secret: string,
  options: VerifyOptions = {},
): Promise<ParleyEvent> {
  await verifySignature(rawBody, signatureHeader, secret, options);
  const text = typeof rawBody === "string" ? rawBody : new TextDecoder().decode(rawBody);
  return JSON.parse(text) as ParleyEvent;
}

/** Signs like Parley does, for testing your own receiver. */
export async function signPayload(rawBody: string | Uint8Array, secret: string, timestamp: number): Promise<string> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  const signature = new Uint8Array(await crypto.subtle.sign("HMAC", key, signedPayload(timestamp, toBytes(rawBody))));
  const hex = Array.from(signature, (byte) => byte.toString(16).padStart(2, "0")).join("");
  return `t=${timestamp},v1=${hex}`;
}
