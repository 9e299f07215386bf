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
import { webchatAdapter } from "./webchat/adapter.js";
import { webchatSandbox } from "./webchat/sandbox.js";
import { whatsappCloudAdapter } from "./whatsapp/cloud-adapter.js";
import { whatsappSandbox } from "./whatsapp/sandbox.js";

export interface AdapterOptions {
  sandbox: SandboxOptions;
  meta: MetaOptions;
}

export const defaultMetaOptions: MetaOptions = {
  graphBaseUrl: "https://graph.facebook.com",
  apiVersion: "v23.0",
  timeoutMs: 15_000,
};

const sandboxes: Record<ChannelType, (options: SandboxOptions) => ChannelAdapter> = {
  whatsapp: whatsappSandbox,
  instagram: instagramSandbox,
  messenger: messengerSandbox,
  email: emailSandbox,
  webchat: webchatSandbox,
  sms: smsSandbox,
};

/** Live adapters by `<type>/<provider>`: the provider a channel was connected with. */
const providers: Record<string, (options: AdapterOptions) => ChannelAdapter> = {
  "whatsapp/meta": (options) => whatsappCloudAdapter(options.meta),
  "messenger/meta": (options) => messengerAdapter(options.meta),
  "instagram/meta": (options) => instagramAdapter(options.meta),
  "email/smtp": () => smtpEmailAdapter(),
  "webchat/webchat": () => webchatAdapter,
};

/** The adapter for a channel: its type's sandbox in the test environment, its provider's in live. */
export function adapterFor(
  channel: { type: ChannelType; provider: string },
  options: AdapterOptions,
): ChannelAdapter | undefined {
  if (channel.provider === "sandbox") return sandboxes[channel.type](options.sandbox);
  return providers[`${channel.type}/${channel.provider}`]?.(options);
}
