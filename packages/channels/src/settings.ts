import { z } from "zod";
import type { ChannelType } from "./capabilities.js";
import { smsChannelSettings } from "./sms/settings.js";
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

const liveProviders: Partial<Record<ChannelType, ProviderSettings>> = {
  whatsapp: { provider: "meta", schema: whatsappSettings, secret: META_SECRETS },
  messenger: { provider: "meta", schema: messengerSettings, secret: META_SECRETS },
  instagram: { provider: "meta", schema: instagramSettings, secret: META_SECRETS },
  email: { provider: "smtp", schema: emailSettings, secret: ["smtp_url"] },
  // Parley hosts web chat itself: no secret, only what the panel shows (greeting, pre-chat form).
  webchat: { provider: "webchat", schema: webchatSettings, secret: [] },
};

/** The provider a live channel of this type connects to, and its settings. */
export function liveProviderOf(type: ChannelType): ProviderSettings | undefined {
  return liveProviders[type];
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
