import type { ChannelType } from "@parley/schema";
import type { ChannelAdapter, MetaOptions } from "./adapter.js";
import { emailSandbox } from "./email/sandbox.js";
import { smtpEmailAdapter } from "./email/smtp-adapter.js";
import { instagramSandbox } from "./instagram/sandbox.js";
import { instagramAdapter } from "./instagram/send-adapter.js";
import { messengerSandbox } from "./messenger/sandbox.js";
import { messengerAdapter } from "./messenger/send-adapter.js";
import type { SandboxOptions } from "./sandbox/adapter.js";
import { smsSandbox } from "./sms/sandbox.js";
import { twilioSmsAdapter } from "./sms/twilio/adapter.js";
import type { TwilioOptions } from "./sms/twilio/client.js";
import { vonageSmsAdapter } from "./sms/vonage/adapter.js";
import { VONAGE_API_BASE_URL, type VonageOptions } from "./sms/vonage/client.js";
import { webchatAdapter } from "./webchat/adapter.js";
import { webchatSandbox } from "./webchat/sandbox.js";
import { whatsappCloudAdapter } from "./whatsapp/cloud-adapter.js";
import { whatsappSandbox } from "./whatsapp/sandbox.js";

export interface AdapterOptions {
  sandbox: SandboxOptions;
  meta: MetaOptions;
  /** Twilio's REST API (`TWILIO_API_BASE_URL`). */
  twilio: TwilioOptions;
  /** Vonage's Messages API (`VONAGE_API_BASE_URL`). */
  vonage: VonageOptions;
  /** Parley's public address, without `/v1`: where providers are told to POST callbacks (Twilio's `StatusCallback`). */
  publicBaseUrl: string;
}

export const defaultMetaOptions: MetaOptions = {
  graphBaseUrl: "https://graph.facebook.com",
  apiVersion: "v23.0",
  timeoutMs: 15_000,
};

export const defaultVonageOptions: VonageOptions = { baseUrl: VONAGE_API_BASE_URL, timeoutMs: 15_000 };

const sandboxes: Record<ChannelType, (options: SandboxOptions) => ChannelAdapter> = {
  whatsapp: whatsappSandbox,
  instagram: instagramSandbox,
  messenger: messengerSandbox,
  email: emailSandbox,
  webchat: webchatSandbox,
  sms: smsSandbox,
};

/**
 * Live adapters by `<type>/<provider>`: the provider a channel was connected with. An SMS
 * adapter reads its pace from the channel's settings (the sender's kind, `mps`).
 */
const providers: Record<string, (options: AdapterOptions, settings: Record<string, unknown>) => ChannelAdapter> = {
  "whatsapp/meta": (options) => whatsappCloudAdapter(options.meta),
  "messenger/meta": (options) => messengerAdapter(options.meta),
  "instagram/meta": (options) => instagramAdapter(options.meta),
  "email/smtp": () => smtpEmailAdapter(),
  "webchat/webchat": () => webchatAdapter,
  "sms/twilio": (options, settings) =>
    twilioSmsAdapter({ twilio: options.twilio, publicBaseUrl: options.publicBaseUrl }, settings),
  "sms/vonage": (options, settings) => vonageSmsAdapter(options.vonage, settings),
};

/**
 * The adapter for a channel: its type's sandbox in the test environment, its provider's in
 * live. `settings` are the channel's, secrets opened (what a send carries in
 * `OutboundMessage.channel.settings`).
 */
export function adapterFor(
  channel: { type: ChannelType; provider: string; settings?: Record<string, unknown> | null },
  options: AdapterOptions,
): ChannelAdapter | undefined {
  if (channel.provider === "sandbox") return sandboxes[channel.type](options.sandbox);
  return providers[`${channel.type}/${channel.provider}`]?.(options, channel.settings ?? {});
}
