import type { ChannelDefinition, ChannelType } from "./capabilities.js";
import { email } from "./email/definition.js";
import { instagram } from "./instagram/definition.js";
import { messenger } from "./messenger/definition.js";
import { webchat } from "./webchat/definition.js";
import { whatsapp } from "./whatsapp/definition.js";

/** Every channel type, declared once in its own folder. */
export const channelRegistry: Record<ChannelType, ChannelDefinition> = {
  whatsapp,
  instagram,
  messenger,
  email,
  webchat,
};

export function channelDefinition(type: ChannelType): ChannelDefinition {
  return channelRegistry[type];
}
