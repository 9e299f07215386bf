import type { ChannelAdapter, MetaOptions } from "../adapter.js";
import { pageMessageBody, pageMessageIdOf } from "../meta/page-messages.js";
import { createMetaAdapter } from "../meta/send-adapter.js";
import { instagramSessionWindow } from "../meta/session-window.js";
import { instagramSettings } from "../settings.js";
import { instagram } from "./definition.js";

/**
 * Instagram Messaging through Facebook Login (the Messenger Platform): `POST /me/messages`
 * as the linked Page (`me` is the Page its access token belongs to, a token a system user
 * can hold without expiry), the Messenger body without `messaging_type`; image, video and
 * audio attachments only (no documents, refused locally as for any type the channel
 * cannot carry). Webhooks name the Instagram account (`instagram_account_id`). The
 * 24-hour window is checked locally.
 * See https://developers.facebook.com/docs/messenger-platform/instagram/features/send-message/
 */
export function instagramAdapter(meta: MetaOptions): ChannelAdapter {
  return createMetaAdapter(meta, {
    definition: instagram,
    settings: instagramSettings,
    window: instagramSessionWindow,
    endpoint: () => "me/messages",
    body: pageMessageBody,
    messageIdOf: pageMessageIdOf,
  });
}
