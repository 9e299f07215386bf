import { createHash, randomUUID } from "node:crypto";
import { importPKCS8, SignJWT } from "jose";

/**
 * The JWT a Vonage application authenticates with (Vonage, Authentication, JSON Web Tokens):
 * header `alg: RS256`, `typ: JWT`; claims `application_id`, `iat`, `jti` (unique) and `exp`,
 * signed with the application's private key. Vonage takes an `exp` from 30 seconds to 24 hours
 * after issue and defaults it to 15 minutes; Parley asks for 15 minutes.
 *
 * One token is signed per request, as Vonage's own server SDKs do: `jti` names one token and a
 * cached token would reuse it, and an RS256 signature costs about a millisecond next to a
 * request's round trip. What is worth keeping is the parsed key, cached by the PEM's hash.
 */
export const VONAGE_JWT_TTL_SECONDS = 15 * 60;

type SigningKey = Awaited<ReturnType<typeof importPKCS8>>;

/** The private key could not be read or could not sign: the channel's settings are wrong. */
export class VonageKeyError extends Error {
  override name = "VonageKeyError";
}

const MAX_CACHED_KEYS = 256;
const keys = new Map<string, Promise<SigningKey>>();

export interface ApplicationJwtInput {
  applicationId: string;
  /** PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), as `vonageSmsSettings` normalises it. */
  privateKey: string;
  /** When the token is issued; tests only. */
  now?: Date;
}

/** A fresh application JWT for one request to Vonage. Throws `VonageKeyError` when the key is unusable. */
export async function signApplicationJwt(input: ApplicationJwtInput): Promise<string> {
  const issuedAt = Math.floor((input.now ?? new Date()).getTime() / 1000);
  const key = await signingKey(input.privateKey);
  try {
    return await new SignJWT({ application_id: input.applicationId })
      .setProtectedHeader({ alg: "RS256", typ: "JWT" })
      .setIssuedAt(issuedAt)
      .setJti(randomUUID())
      .setExpirationTime(issuedAt + VONAGE_JWT_TTL_SECONDS)
      .sign(key);
  } catch (error) {
    throw new VonageKeyError(`The private key cannot sign an RS256 token (${errorName(error)})`);
  }
}

function signingKey(pem: string): Promise<SigningKey> {
  // The hash, not the PEM, names the entry: the map holds no second copy of the secret.
  const id = createHash("sha256").update(pem).digest("hex");
  const cached = keys.get(id);
  if (cached) return cached;
  const imported = importPKCS8(pem, "RS256").catch((error: unknown) => {
    keys.delete(id);
    throw new VonageKeyError(`The private key is not a PKCS#8 RSA key jose can use (${errorName(error)})`);
  });
  if (keys.size >= MAX_CACHED_KEYS) {
    // Oldest first: Map keeps insertion order.
    const oldest = keys.keys().next().value;
    if (oldest !== undefined) keys.delete(oldest);
  }
  keys.set(id, imported);
  return imported;
}

/** An error's class name, never its message: a crypto library's message may quote input. */
function errorName(error: unknown): string {
  return error instanceof Error ? error.name : "unknown error";
}
