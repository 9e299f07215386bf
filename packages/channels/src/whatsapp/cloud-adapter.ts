import type { ChannelAdapter, MetaOptions, OutboundMessage } from "../adapter.js";
import { createMetaAdapter, fieldOf, nonEmptyString, type SendContent } from "../meta/send-adapter.js";
import { whatsappSessionWindow } from "../meta/session-window.js";
import { whatsappSettings } from "../settings.js";
import { whatsapp } from "./definition.js";

/**
 * WhatsApp Cloud API: `POST /{phone_number_id}/messages`. Media goes by `link` (the
 * attachment's signed public URL), so Meta fetches the file itself. Parley's message id
 * rides along as `biz_opaque_callback_data` and comes back on every status webhook.
 * See https://developers.facebook.com/docs/whatsapp/cloud-api/reference/messages
 */
/**
 * Meta's default throughput of a business phone number: 80 messages a second (numbers
 * upgraded by Meta take more; a number over its pace gets error 130429, retried).
 */
export const WHATSAPP_MESSAGES_PER_SECOND = 80;

export function whatsappCloudAdapter(meta: MetaOptions): ChannelAdapter {
  const adapter = createMetaAdapter(meta, {
    definition: whatsapp,
    settings: whatsappSettings,
    window: whatsappSessionWindow,
    endpoint: (settings) => `${settings.phone_number_id}/messages`,
    body: whatsappBody,
    // `{"messaging_product":"whatsapp","contacts":[...],"messages":[{"id":"wamid..."}]}`
    messageIdOf: (answer) => {
      const messages = fieldOf(answer, "messages");
      return Array.isArray(messages) ? nonEmptyString(fieldOf(messages[0], "id")) : null;
    },
  });
  return { send: (message) => adapter.send(message), messagesPerSecond: WHATSAPP_MESSAGES_PER_SECOND };
}

function whatsappBody(content: SendContent, to: string, message: OutboundMessage): Record<string, unknown> {
  const envelope = {
    messaging_product: "whatsapp",
    recipient_type: "individual",
    to,
    biz_opaque_callback_data: message.id,
  };
  if (content.type === "text") {
    return { ...envelope, type: "text", text: { body: content.text, preview_url: false } };
  }
  return { ...envelope, type: content.type, [content.type]: whatsappMedia(content) };
}

/** Audio takes no caption; a document keeps its file name. */
function whatsappMedia(content: Exclude<SendContent, { type: "text" }>): Record<string, string> {
  const media: Record<string, string> = { link: content.attachment.publicUrl };
  if (content.caption !== null && content.type !== "audio") media.caption = content.caption;
  if (content.type === "document") media.filename = content.attachment.filename;
  return media;
}
