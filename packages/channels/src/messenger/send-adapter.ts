import type { ChannelAdapter, MetaOptions } from "../adapter.js";
import { pageMessageBody, pageMessageIdOf } from "../meta/page-messages.js";
import { createMetaAdapter } from "../meta/send-adapter.js";
import { messengerSessionWindow } from "../meta/session-window.js";
import { messengerSettings } from "../settings.js";
import { messenger } from "./definition.js";

/**
 * Messenger Platform Send API: `POST /{page_id}/messages` with the page access token.
 * `messaging_type: RESPONSE` is a reply within the 24-hour window, which is checked locally
 * (Meta's code 10 outside it). See https://developers.facebook.com/docs/messenger-platform/reference/send-api/
 */
export function messengerAdapter(meta: MetaOptions): ChannelAdapter {
  return createMetaAdapter(meta, {
    definition: messenger,
    settings: messengerSettings,
    window: messengerSessionWindow,
    endpoint: (settings) => `${settings.page_id}/messages`,
    body: (content, psid) => ({ ...pageMessageBody(content, psid), messaging_type: "RESPONSE" }),
    messageIdOf: pageMessageIdOf,
  });
}
