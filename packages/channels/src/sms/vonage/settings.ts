import { createPrivateKey, type KeyObject } from "node:crypto";
import { z } from "zod";
import type { ProviderSettings } from "../../settings.js";
import { isNanpNumber, toVonageNumber } from "./numbers.js";

/**
 * The settings of an `sms` channel carried by Vonage's Messages API, as
 * `pnpm admin connect-channel --type sms --setting provider=vonage --setting application_id=...
 * --setting private_key=<PEM> --setting signature_secret=... --setting from=447700900000` takes
 * them. Each field is normalised on the way in (escaped newlines of a pasted key, a leading `+`
 * of the sender), so what is stored parses again to itself.
 */

/** Read by `vonagePace`: Vonage's documented default throughput of an API key. */
export const VONAGE_API_KEY_MESSAGES_PER_SECOND = 30;
/** Vonage: "When sending from US long virtual numbers, you are restricted to 1 SMS per second". */
export const VONAGE_US_LONG_NUMBER_MESSAGES_PER_SECOND = 1;

/** Encrypted at rest, never returned by the API. */
export const VONAGE_SMS_SECRET_SETTINGS = ["private_key", "signature_secret"] as const;

const RSA_MIN_BITS = 2048;

const applicationId = z
  .string()
  .trim()
  .toLowerCase()
  .regex(
    /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    "must be the Vonage application's id, a UUID like aaaaaaaa-bbbb-cccc-dddd-0123456789ab (Vonage Dashboard, Applications)",
  );

const privateKey = z
  .string()
  .max(20_000)
  .transform((value, ctx) => {
    const normalised = normalisePrivateKey(value);
    if (typeof normalised === "string") return normalised;
    ctx.issues.push({ code: "custom", message: normalised.problem, input: "[private key]" });
    return z.NEVER;
  });

const signatureSecret = z
  .string()
  .trim()
  .min(1, "must be the account's signature secret (Vonage Dashboard, API settings)")
  .max(2000);

const from = z
  .string()
  .trim()
  .transform((value, ctx) => {
    const sender = senderOf(value);
    if (sender !== null) return sender;
    ctx.issues.push({
      code: "custom",
      message:
        "must be the sender: a phone number in international format (447700900000; a leading + is accepted), a short code, or an alphanumeric sender id of 1 to 11 letters and digits",
      input: value,
    });
    return z.NEVER;
  });

export const vonageSmsSettings = z.object({
  application_id: applicationId,
  private_key: privateKey,
  signature_secret: signatureSecret,
  from,
  /** Messages a second this channel may send; see `vonagePace` for the default. */
  mps: z.coerce
    .number()
    .positive("must be a positive number of messages a second")
    .max(10_000, "must be at most 10000 messages a second")
    .optional(),
});

export type VonageSmsSettings = z.infer<typeof vonageSmsSettings>;

/** What `settings.ts`'s `liveProviders` takes for `sms` when Vonage carries it. */
export const vonageSmsProvider: ProviderSettings = {
  provider: "vonage",
  schema: vonageSmsSettings,
  secret: VONAGE_SMS_SECRET_SETTINGS,
};

/**
 * The pace the worker keeps for one channel: `mps` when set, else what Vonage documents.
 * Every API key takes 30 requests a second by default; a US (or other +1) long number sends 1
 * SMS a second. Toll-free and 10DLC throughput depend on registration and Vonage publishes no
 * default for them, so +1 numbers get the safe 1; an operator who knows better sets `mps`.
 */
export function vonagePace(settings: Pick<VonageSmsSettings, "from" | "mps">): number {
  if (settings.mps !== undefined) return settings.mps;
  return isNanpNumber(settings.from) ? VONAGE_US_LONG_NUMBER_MESSAGES_PER_SECOND : VONAGE_API_KEY_MESSAGES_PER_SECOND;
}

/** Which settings are wrong, by name; never their values (some are secrets). */
export function settingsProblem(error: z.ZodError): string {
  const problems = error.issues.map((issue) => `${issue.path.join(".") || "settings"}: ${issue.message}`);
  return `The channel's settings are invalid (${problems.join("; ")})`;
}

/**
 * The sender as Vonage takes it: a number's digits (no `+`), a short code, or an
 * alphanumeric sender id; null when it is none of these.
 */
function senderOf(value: string): string | null {
  if (/^\+/.test(value)) return toVonageNumber(value);
  if (/^[\d\s().-]+$/.test(value)) {
    const digits = value.replace(/\D/g, "");
    // E.164 numbers have at most 15 digits; short codes have 3 or more.
    return digits.length >= 3 && digits.length <= 15 ? digits : null;
  }
  return /^[A-Za-z0-9 ]{1,11}$/.test(value) && /[A-Za-z]/.test(value) ? value : null;
}

/**
 * A private key as a CLI user pastes it (real newlines, `\n` escapes, one line, PKCS#1 or
 * PKCS#8) as a PKCS#8 PEM with 64-column lines; or what is wrong with it. The key itself
 * never appears in a problem.
 */
export function normalisePrivateKey(input: string): string | { problem: string } {
  const text = input
    .replace(/\\r\\n|\\n|\\r/g, "\n")
    .replace(/\r\n?/g, "\n")
    .trim()
    .replace(/^(["'])([\s\S]*)\1$/, "$2")
    .trim();
  const pem = /^-----BEGIN ([A-Z ]+)-----([\s\S]*?)-----END \1-----$/.exec(text);
  const label = pem?.[1];
  const body = pem?.[2]?.replace(/\s+/g, "") ?? "";
  if (!label || !/^[A-Za-z0-9+/]+={0,2}$/.test(body)) {
    return { problem: "must be the application's private key in PEM form (-----BEGIN PRIVATE KEY----- ...)" };
  }
  if (label === "ENCRYPTED PRIVATE KEY") return { problem: "is encrypted with a passphrase: export it without one" };
  if (label !== "PRIVATE KEY" && label !== "RSA PRIVATE KEY") {
    return { problem: `must be a private key, not a ${label.toLowerCase()}` };
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(`-----BEGIN ${label}-----\n${body.replace(/.{1,64}/g, "$&\n")}-----END ${label}-----\n`);
  } catch {
    return { problem: "is not a readable private key (the PEM is damaged or incomplete)" };
  }
  if (key.asymmetricKeyType !== "rsa") {
    return { problem: `must be an RSA key (Vonage signs with RS256), not ${key.asymmetricKeyType ?? "this kind"}` };
  }
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < RSA_MIN_BITS) return { problem: `must be an RSA key of at least ${RSA_MIN_BITS} bits, not ${bits}` };
  return key.export({ type: "pkcs8", format: "pem" }).toString();
}
