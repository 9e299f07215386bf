import { createHash, timingSafeEqual } from "node:crypto";
import { errors, jwtVerify } from "jose";

/**
 * Vonage's signed webhooks (Messages API, "Signed webhooks"): every inbound message and status
 * callback carries `Authorization: Bearer <JWT>`, HS256 with the account's signature secret,
 * claims `iat`, `jti`, `iss: "Vonage"`, `payload_hash` (hex SHA-256 of the request body),
 * `api_key` and, when an application sent the message, `application_id`. There is no `exp`:
 * a token's age is judged by `iat`. Vonage signs each delivery attempt (an unsigned callback
 * answered with a 5xx is retried "giving the system time to ... sign future callbacks"), so
 * a retried callback carries a fresh token and a short age limit refuses only replays.
 */
export const VONAGE_WEBHOOK_MAX_AGE_SECONDS = 5 * 60;
/** Clocks differ: a token issued this far "in the future", or this much past the limit, still passes. */
const CLOCK_TOLERANCE_SECONDS = 30;

export interface VonageWebhookClaims {
  issuedAt: Date;
  jti: string | null;
  apiKey: string | null;
  applicationId: string | null;
}

/** Why a webhook was refused: a word for logs and metrics, never a secret or the body. */
export type VonageSignatureFailure =
  | "missing"
  | "malformed"
  | "bad_signature"
  | "wrong_issuer"
  | "expired"
  | "issued_in_future"
  | "payload_mismatch"
  | "wrong_application";

export type VonageSignatureCheck =
  | { valid: true; claims: VonageWebhookClaims }
  | { valid: false; reason: VonageSignatureFailure };

export interface VonageSignatureOptions {
  /** The channel's application: a token naming another application is refused. */
  applicationId?: string;
  /** Default 300 s. */
  maxAgeSeconds?: number;
  /** Tests only. */
  now?: Date;
}

const BEARER = /^Bearer +([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+) *$/i;
const HEX_SHA256 = /^[0-9a-f]{64}$/i;

/**
 * Whether a webhook is Vonage's, for exactly these bytes: the Bearer token verifies with the
 * signature secret (HS256 only), comes from Vonage, is recent, names this channel's
 * application when it names one, and its `payload_hash` is the SHA-256 of the raw body
 * (compared in constant time; re-serialized JSON would differ). Never throws.
 */
export async function verifyVonageSignature(
  rawBody: Buffer,
  authorization: string | undefined,
  signatureSecret: string,
  options: VonageSignatureOptions = {},
): Promise<VonageSignatureCheck> {
  if (authorization === undefined || authorization.trim() === "") return refused("missing");
  const token = BEARER.exec(authorization.trim())?.[1];
  if (!token) return refused("malformed");
  if (signatureSecret.length === 0) return refused("bad_signature");

  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, new TextEncoder().encode(signatureSecret), {
      algorithms: ["HS256"],
      issuer: "Vonage",
      requiredClaims: ["payload_hash"],
      maxTokenAge: options.maxAgeSeconds ?? VONAGE_WEBHOOK_MAX_AGE_SECONDS,
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      ...(options.now ? { currentDate: options.now } : {}),
    }));
  } catch (error) {
    return refused(failureOf(error));
  }

  const claimed = typeof payload.payload_hash === "string" ? payload.payload_hash : "";
  if (!HEX_SHA256.test(claimed)) return refused("payload_mismatch");
  const actual = createHash("sha256").update(rawBody).digest();
  if (!timingSafeEqual(Buffer.from(claimed, "hex"), actual)) return refused("payload_mismatch");

  const applicationId = typeof payload.application_id === "string" ? payload.application_id : null;
  if (
    options.applicationId !== undefined &&
    applicationId !== null &&
    applicationId.toLowerCase() !== options.applicationId.toLowerCase()
  ) {
    return refused("wrong_application");
  }
  return {
    valid: true,
    claims: {
      issuedAt: new Date(Number(payload.iat) * 1000),
      jti: typeof payload.jti === "string" ? payload.jti : null,
      apiKey: typeof payload.api_key === "string" ? payload.api_key : null,
      applicationId,
    },
  };
}

function refused(reason: VonageSignatureFailure): VonageSignatureCheck {
  return { valid: false, reason };
}

function failureOf(error: unknown): VonageSignatureFailure {
  if (error instanceof errors.JWSSignatureVerificationFailed) return "bad_signature";
  if (error instanceof errors.JWTExpired) return "expired";
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === "iss") return "wrong_issuer";
    if (error.claim === "iat" && error.reason === "check_failed") return "issued_in_future";
    if (error.claim === "payload_hash") return "payload_mismatch";
  }
  // Not a JWT, another algorithm (`none`, RS256...), a claim missing or of the wrong type.
  return "malformed";
}
