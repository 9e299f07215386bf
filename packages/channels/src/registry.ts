import type { ChannelCapabilities, ChannelDefinition, ChannelType } from "./capabilities.js";
import { email } from "./email/definition.js";
import { instagram } from "./instagram/definition.js";
import { messenger } from "./messenger/definition.js";
import { sms } from "./sms/definition.js";
import { webchat } from "./webchat/definition.js";
import { whatsapp } from "./whatsapp/definition.js";

/** Every channel type, declared once in its own folder. */
export const channelRegistry: Record<ChannelType, ChannelDefinition> = {
  whatsapp,
  instagram,
  messenger,
  email,
  webchat,
  sms,
};

export function channelDefinition(type: ChannelType): ChannelDefinition {
  return channelRegistry[type];
}

/**
 * What this channel can do: its type's capabilities as its settings narrow them. The one
 * answer for the API's `capabilities` and for the check of a send's type.
 */
export function channelCapabilities(channel: {
  type: ChannelType;
  settings: Record<string, unknown> | null;
}): ChannelCapabilities {
  const definition = channelRegistry[channel.type];
  return definition.capabilitiesOf?.(channel.settings ?? {}) ?? definition.capabilities;
}
