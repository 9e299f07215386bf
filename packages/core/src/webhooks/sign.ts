import { createHmac } from "node:crypto";

/**
 * Stripe's scheme (decisions.md): `t=<unix seconds>,v1=<hex HMAC-SHA-256 of "<t>.<raw
 * body>">`, one `v1` per valid secret, so a receiver keeps verifying during a rotation.
 */
export function signatureHeader(secrets: readonly string[], timestamp: number, body: string): string {
  const signatures = secrets.map((secret) => `v1=${hmacHex(secret, `${timestamp}.${body}`)}`);
  return [`t=${timestamp}`, ...signatures].join(",");
}

function hmacHex(secret: string, payload: string): string {
  return createHmac("sha256", secret).update(payload).digest("hex");
}
