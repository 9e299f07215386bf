import type { ChannelType } from "@parley/schema";
import type { ChannelAdapter } from "./adapter.js";
import { emailSandbox } from "./email/sandbox.js";
import { instagramSandbox } from "./instagram/sandbox.js";
import { messengerSandbox } from "./messenger/sandbox.js";
import type { SandboxOptions } from "./sandbox/adapter.js";
import { webchatAdapter } from "./webchat/adapter.js";
import { webchatSandbox } from "./webchat/sandbox.js";
import { whatsappSandbox } from "./whatsapp/sandbox.js";

export interface AdapterOptions {
  sandbox: SandboxOptions;
}

const sandboxes: Record<ChannelType, (options: SandboxOptions) => ChannelAdapter> = {
  whatsapp: whatsappSandbox,
  instagram: instagramSandbox,
  messenger: messengerSandbox,
  email: emailSandbox,
  webchat: webchatSandbox,
};

/** The adapter for a channel: its type's sandbox in the test environment, its provider's in live. */
export function adapterFor(
  channel: { type: ChannelType; provider: string },
  options: AdapterOptions,
): ChannelAdapter | undefined {
  if (channel.provider === "sandbox") return sandboxes[channel.type](options.sandbox);
  if (channel.type === "webchat") return webchatAdapter;
  return undefined;
}
