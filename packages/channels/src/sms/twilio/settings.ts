import { parsePhoneNumberFromString } from "libphonenumber-js";
import { z } from "zod";
import type { ProviderSettings } from "../../settings.js";

/**
 * A Twilio sms channel's settings, as `pnpm admin connect-channel --type sms --setting
 * provider=twilio --setting key=value ...` gives them (strings; `mms` and `mps` are read
 * from their text). See NOTES.md beside this file for where Twilio's docs shaped them.
 */

/** Twilio's SIDs: two capital letters naming the resource, then 32 hex digits. */
function sid(prefix: "AC" | "SK" | "MG", what: string) {
  return z
    .string()
    .trim()
    .regex(new RegExp(`^${prefix}[0-9a-fA-F]{32}$`), `must be ${what}: ${prefix} followed by 32 hex digits`);
}

const secret = z.string().trim().min(1, "must not be empty").max(200);

/** A US/Canadian short code (5 or 6 digits), or a phone number normalised to E.164. */
const sender = z
  .string()
  .trim()
  .transform((value, context) => {
    if (/^\d{5,6}$/.test(value)) return value;
    const number = value.startsWith("+") ? parsePhoneNumberFromString(value) : undefined;
    if (number?.isPossible()) return number.number;
    context.addIssue({
      code: "custom",
      message: "must be a phone number in E.164 form (+ country code and number) or a 5–6 digit short code",
    });
    return z.NEVER;
  });

/** `true`/`false`, or their text as `--setting mms=true` gives it. */
const flag = z.union([z.boolean(), z.enum(["true", "false"]).transform((value) => value === "true")]);

/** A positive number, or its text. */
const rate = z
  .union([
    z.number(),
    z
      .string()
      .trim()
      .regex(/^\d+(\.\d+)?$/, "must be a number")
      .transform(Number),
  ])
  .pipe(z.number().positive("must be more than 0").max(10_000));

export const twilioSmsSettings = z
  .object({
    /** Present when the CLI's `provider=twilio` is kept with the settings; nothing else is accepted. */
    provider: z.literal("twilio").optional(),
    account_sid: sid("AC", "the Account SID shown in Twilio's Console"),
    /**
     * Always required: Twilio signs every webhook (incoming messages, status callbacks) with
     * the account's Auth Token, even when the REST API is called with an API key.
     */
    auth_token: secret,
    /** An API key (Standard is enough) for the REST API instead of the Auth Token. */
    api_key_sid: sid("SK", "an API key SID").optional(),
    api_key_secret: secret.optional(),
    /** The sender: one of your Twilio numbers or short codes... */
    from: sender.optional(),
    /** ...or a Messaging Service, which picks the sender from its pool. */
    messaging_service_sid: sid("MG", "a Messaging Service SID").optional(),
    /** Images go out as MMS (US and Canadian numbers); otherwise the channel carries text only. */
    mms: flag.optional(),
    /** Messages a second Parley sends through this channel; defaults by sender kind (`twilioPace`). */
    mps: rate.optional(),
  })
  .superRefine((settings, context) => {
    const senders = [settings.from, settings.messaging_service_sid].filter((value) => value !== undefined);
    if (senders.length !== 1) {
      context.addIssue({
        code: "custom",
        path: ["from"],
        message: `set exactly one sender: from (a phone number or short code) or messaging_service_sid, not ${senders.length === 0 ? "neither" : "both"}`,
      });
    }
    if ((settings.api_key_sid === undefined) !== (settings.api_key_secret === undefined)) {
      const missing = settings.api_key_sid === undefined ? "api_key_sid" : "api_key_secret";
      context.addIssue({
        code: "custom",
        path: [missing],
        message: "an API key needs both api_key_sid and api_key_secret",
      });
    }
  });

export type TwilioSmsSettings = z.infer<typeof twilioSmsSettings>;

/** Encrypted at rest and never returned by the API. */
export const TWILIO_SECRET_SETTINGS = ["auth_token", "api_key_secret"] as const;

/** For the channel catalogue (`liveProviderOf`): Twilio's settings and which of them are secret. */
export const twilioProviderSettings: ProviderSettings = {
  provider: "twilio",
  schema: twilioSmsSettings,
  secret: TWILIO_SECRET_SETTINGS,
};

export type TwilioSenderKind = "long_code" | "toll_free" | "short_code" | "messaging_service";

/** US and Canadian toll-free area codes (NANP): +1 800, 833, 844, 855, 866, 877, 888. */
const TOLL_FREE = /^\+1(800|833|844|855|866|877|888)\d{7}$/;

export function twilioSenderKind(
  settings: Pick<TwilioSmsSettings, "from" | "messaging_service_sid">,
): TwilioSenderKind {
  if (settings.messaging_service_sid !== undefined || settings.from === undefined) return "messaging_service";
  if (/^\d{5,6}$/.test(settings.from)) return "short_code";
  return TOLL_FREE.test(settings.from) ? "toll_free" : "long_code";
}

/**
 * Twilio's default throughput toward the US and Canada, in message segments a second: a long
 * code 1, a toll-free number 3, a short code 100. A Messaging Service's throughput is that of
 * its pool, unknown here: 1 unless `mps` says more.
 */
const DEFAULT_PACE: Record<TwilioSenderKind, number> = {
  long_code: 1,
  toll_free: 3,
  short_code: 100,
  messaging_service: 1,
};

/** The messages a second the worker paces this channel's sends to. */
export function twilioPace(settings: Pick<TwilioSmsSettings, "from" | "messaging_service_sid" | "mps">): number {
  return settings.mps ?? DEFAULT_PACE[twilioSenderKind(settings)];
}

/** The REST API's Basic credentials: the API key when there is one, else the Account SID and Auth Token. */
export interface TwilioCredentials {
  accountSid: string;
  username: string;
  password: string;
}

export function twilioCredentials(settings: TwilioSmsSettings): TwilioCredentials {
  const { account_sid: accountSid, api_key_sid: keySid, api_key_secret: keySecret } = settings;
  if (keySid !== undefined && keySecret !== undefined) return { accountSid, username: keySid, password: keySecret };
  return { accountSid, username: accountSid, password: settings.auth_token };
}
