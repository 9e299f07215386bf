import type { ChannelDefinition } from "../capabilities.js";

/**
 * Messenger Platform Send API: text and attachments of type image, video, audio and
 * file; `message_deliveries` and `message_reads` webhooks; the standard 24-hour
 * messaging window after the person's last message.
 */
export const messenger: ChannelDefinition = {
  type: "messenger",
  label: "Facebook Messenger",
  capabilities: {
    messageTypes: ["text", "image", "video", "audio", "document"],
    deliveryReceipts: true,
    readReceipts: true,
    sessionWindowHours: 24,
  },
  source: "Messenger Platform: Send API attachments (image, video, audio, file), message_deliveries, message_reads",
};
