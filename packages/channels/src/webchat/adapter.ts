import type { ChannelAdapter } from "../adapter.js";

/**
 * Live web chat: Parley hosts the channel, so a message is `sent` once stored for the
 * widget; `delivered` and `read` come from the visitor's page.
 */
export const webchatAdapter: ChannelAdapter = {
  async send(message) {
    return { outcome: "sent", providerMessageId: `webchat_${message.id}`, receipts: [] };
  },
};
