import { z } from "zod";
import type { ChannelType } from "./capabilities.js";
import { smsChannelSettings } from "./sms/settings.js";
import { twilioProviderSettings } from "./sms/twilio/settings.js";
import { vonageSmsProvider } from "./sms/vonage/settings.js";
import { webchatSettings } from "./webchat/settings.js";

/**
 * The settings each live provider needs, as `pnpm admin connect-channel` takes them.
 * Fields named in `secret` are encrypted at rest and never returned by the API.
 */
export interface ProviderSettings {
  provider: string;
  schema: z.ZodObject;
  secret: readonly string[];
}

const token = z.string().trim().min(1).max(2000);
const metaId = z
  .string()
  .trim()
  .regex(/^\d{1,32}$/, "must be the numeric id Meta shows");
const metaSecrets = { access_token: token, app_secret: token, verify_token: token };
const META_SECRETS = ["access_token", "app_secret", "verify_token"] as const;

export const whatsappSettings = z.object({
  phone_number_id: metaId,
  business_account_id: metaId.optional(),
  ...metaSecrets,
});
export const messengerSettings = z.object({ page_id: metaId, ...metaSecrets });
export const instagramSettings = z.object({ instagram_account_id: metaId, ...metaSecrets });
export const emailSettings = z.object({
  /** The address customers write to and replies come from. */
  address: z.email(),
  from_name: z.string().trim().min(1).max(120).optional(),
  /** `smtp://user:pass@host:587` or `smtps://...:465`: the outbound relay. */
  smtp_url: z.url({ protocol: /^smtps?$/ }),
});

export type WhatsappSettings = z.infer<typeof whatsappSettings>;
export type MessengerSettings = z.infer<typeof messengerSettings>;
export type InstagramSettings = z.infer<typeof instagramSettings>;
export type EmailSettings = z.infer<typeof emailSettings>;

/**
 * An SMS provider's settings with what every SMS channel has (`mms`, `default_region`,
 * smsChannelSettings) beside its credentials and sender; the provider's own checks stay.
 */
function smsProvider(provider: ProviderSettings, own: z.ZodRawShape = {}): ProviderSettings {
  return { ...provider, schema: provider.schema.safeExtend({ ...smsChannelSettings.shape, ...own }) };
}

/**
 * Vonage's MMS is another channel of its Messages API (from US numbers only) that Parley does
 * not send: a Vonage number carries text, and `mms=true` would promise images it cannot send.
 */
const vonageTextOnly = {
  mms: smsChannelSettings.shape.mms.refine(
    (mms) => !mms,
    "must be false: Parley sends text only through Vonage (its MMS is another channel, from US numbers only)",
  ),
};

/** The live providers of each type; a type with several is connected with the one its `provider` setting names. */
const liveProviders: Partial<Record<ChannelType, readonly ProviderSettings[]>> = {
  whatsapp: [{ provider: "meta", schema: whatsappSettings, secret: META_SECRETS }],
  messenger: [{ provider: "meta", schema: messengerSettings, secret: META_SECRETS }],
  instagram: [{ provider: "meta", schema: instagramSettings, secret: META_SECRETS }],
  email: [{ provider: "smtp", schema: emailSettings, secret: ["smtp_url"] }],
  // Parley hosts web chat itself: no secret, only what the panel shows (greeting, pre-chat form).
  webchat: [{ provider: "webchat", schema: webchatSettings, secret: [] }],
  // Twilio or Vonage, as `--setting provider=twilio|vonage` says (docs/channels/sms.md).
  sms: [smsProvider(twilioProviderSettings), smsProvider(vonageSmsProvider, vonageTextOnly)],
};

/** A provider that a channel type cannot be connected with, or none named where the type has several. */
export class ChannelProviderError extends Error {
  override name = "ChannelProviderError";
}

/** The providers a live channel of this type may be connected with (`twilio`, `vonage` for `sms`). */
export function liveProvidersOf(type: ChannelType): string[] {
  return (liveProviders[type] ?? []).map((each) => each.provider);
}

/**
 * The provider a live channel of this type connects to, and its settings. A type with one
 * provider has it whatever `provider` says (callers compare it with the channel's). A type
 * with several (`sms`: Twilio, Vonage) needs `provider` to name one of them: none or another
 * throws a `ChannelProviderError` naming the choices. Undefined: the type has no live provider.
 */
export function liveProviderOf(type: ChannelType, provider?: string): ProviderSettings | undefined {
  const choices = liveProviders[type];
  if (!choices || choices.length === 0) return undefined;
  if (choices.length === 1) return choices[0];
  const chosen = choices.find((each) => each.provider === provider);
  if (chosen) return chosen;
  const names = choices.map((each) => each.provider);
  const given = provider === undefined ? "no provider" : `provider '${provider}'`;
  throw new ChannelProviderError(
    `A live ${type} channel needs --setting provider=${names.join(" or provider=")} (got ${given})`,
  );
}

/**
 * The settings a sandbox channel of this type may have: none but what shapes its behaviour
 * and can be tried without a provider (web chat's panel; an SMS number's MMS and default
 * region), changed with `pnpm admin update-channel`.
 */
const sandboxSettings: Partial<Record<ChannelType, ProviderSettings>> = {
  webchat: { provider: "sandbox", schema: webchatSettings, secret: [] },
  sms: { provider: "sandbox", schema: smsChannelSettings, secret: [] },
};

export function sandboxSettingsOf(type: ChannelType): ProviderSettings | undefined {
  return sandboxSettings[type];
}

/** Settings split into what may be stored in the clear and what is encrypted. */
export function splitSecrets(
  provider: ProviderSettings,
  settings: Record<string, unknown>,
): { plain: Record<string, unknown>; secret: Record<string, unknown> } {
  const plain: Record<string, unknown> = {};
  const secret: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(settings)) {
    if (provider.secret.includes(key)) secret[key] = value;
    else plain[key] = value;
  }
  return { plain, secret };
}
