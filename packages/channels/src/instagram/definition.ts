import type { ChannelDefinition } from "../capabilities.js";

/**
 * Instagram Messaging: text and image, video and audio attachments (no documents);
 * read events (`messaging_seen`) but no delivery webhook; the 24-hour window after the
 * person's last message.
 */
export const instagram: ChannelDefinition = {
  type: "instagram",
  label: "Instagram Messaging",
  capabilities: {
    messageTypes: ["text", "image", "video", "audio"],
    deliveryReceipts: false,
    readReceipts: true,
    sessionWindowHours: 24,
  },
  source: "Instagram Messaging: Send API (text, image, video, audio), messaging_seen webhooks",
};
