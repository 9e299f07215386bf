import { createHmac, timingSafeEqual } from "node:crypto";

/** How long a provider may fetch a file by link: long enough for its retries, short enough to leak little. */
export const SIGNED_CONTENT_URL_LIFETIME_MS = 60 * 60 * 1000;

function signatureOf(secret: string, attachmentId: string, expires: number): string {
  return createHmac("sha256", secret).update(`${attachmentId}.${expires}`).digest("base64url");
}

/**
 * A keyless, expiring address of an attachment's bytes (`/files/{id}?expires&signature`),
 * for providers that fetch media by link (WhatsApp, Messenger, Instagram).
 */
export function signedContentUrl(
  baseUrl: string,
  secret: string,
  attachmentId: string,
  now = Date.now(),
  lifetimeMs = SIGNED_CONTENT_URL_LIFETIME_MS,
): string {
  const expires = Math.floor((now + lifetimeMs) / 1000);
  const signature = signatureOf(secret, attachmentId, expires);
  return `${baseUrl}/files/${encodeURIComponent(attachmentId)}?expires=${expires}&signature=${signature}`;
}

/** Whether a signed address is genuine and not expired. */
export function verifyContentSignature(
  secret: string,
  attachmentId: string,
  expires: unknown,
  signature: unknown,
  now = Date.now(),
): boolean {
  if (typeof expires !== "string" || !/^\d{1,12}$/.test(expires) || typeof signature !== "string") return false;
  const expected = Buffer.from(signatureOf(secret, attachmentId, Number(expires)));
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return false;
  return Number(expires) * 1000 > now;
}

/** The instance secret that signs content addresses, shared by the API (verifies) and the worker (signs). */
export const CONTENT_URL_SECRET_NAME = "content_url_signing";
