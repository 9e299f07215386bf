import type { channels } from "@parley/db";
import type { SecretBox } from "./secret-box.js";

type ChannelRow = typeof channels.$inferSelect;

/** A channel's settings as its adapter needs them: the stored ones and the decrypted secrets. */
export function channelSettings(box: SecretBox, channel: ChannelRow): Record<string, unknown> {
  if (!channel.secretSettings) return channel.settings;
  return { ...channel.settings, ...box.open(channel.secretSettings) };
}
