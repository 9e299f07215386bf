import type { MetaChannelKey } from "./webhook.js";

/** The setting that names a Meta channel's account: how a webhook entry finds its channel. */
const accountSetting: Record<MetaChannelKey["type"], string> = {
  whatsapp: "phone_number_id",
  messenger: "page_id",
  instagram: "instagram_account_id",
};

function accountOf(key: MetaChannelKey): string {
  if (key.type === "whatsapp") return key.phoneNumberId;
  if (key.type === "messenger") return key.pageId;
  return key.accountId;
}

/** Whether a webhook item is about this channel (same type, same account id). */
export function isMetaChannelFor(
  channel: { type: string; settings: Record<string, unknown> },
  key: MetaChannelKey,
): boolean {
  return channel.type === key.type && channel.settings[accountSetting[key.type]] === accountOf(key);
}
