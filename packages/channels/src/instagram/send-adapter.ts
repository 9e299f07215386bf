import type { ChannelAdapter, MetaOptions } from "../adapter.js";
import { pageMessageBody, pageMessageIdOf } from "../meta/page-messages.js";
import { createMetaAdapter } from "../meta/send-adapter.js";
import { instagramSessionWindow } from "../meta/session-window.js";
import { instagramSettings } from "../settings.js";
import { instagram } from "./definition.js";

/**
 * Instagram Messaging: `POST /{instagram_account_id}/messages`, the Messenger body without
 * `messaging_type`; image, video and audio attachments only (no documents, refused locally
 * as for any type the channel cannot carry). The 24-hour window is checked locally.
 * Instagram API with Instagram Login: served at `graph.instagram.com` (`instagramBaseUrl`)
 * with the Instagram user access token of the professional account.
 * See https://developers.facebook.com/docs/instagram-platform/instagram-api-with-instagram-login/messaging-api
 */
export function instagramAdapter(meta: MetaOptions): ChannelAdapter {
  return createMetaAdapter(
    { ...meta, graphBaseUrl: meta.instagramBaseUrl },
    {
      definition: instagram,
      settings: instagramSettings,
      window: instagramSessionWindow,
      endpoint: (settings) => `${settings.instagram_account_id}/messages`,
      body: pageMessageBody,
      messageIdOf: pageMessageIdOf,
    },
  );
}
