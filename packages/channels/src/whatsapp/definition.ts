import type { ChannelDefinition } from "../capabilities.js";

/**
 * WhatsApp Cloud API: text and media messages (image, video, audio, document); status
 * webhooks report `sent`, `delivered`, `read` and `failed`; a free-form message is only
 * accepted within 24 hours of the customer's last message (error 131047 outside it).
 */
export const whatsapp: ChannelDefinition = {
  type: "whatsapp",
  label: "WhatsApp Cloud API",
  capabilities: {
    messageTypes: ["text", "image", "video", "audio", "document"],
    deliveryReceipts: true,
    readReceipts: true,
    sessionWindowHours: 24,
  },
  source: "WhatsApp Cloud API: messages (text, image, video, audio, document) and status webhooks",
};
