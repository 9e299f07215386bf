import type { ChannelDefinition } from "../capabilities.js";

/**
 * Parley's own web chat widget: text only. The widget reports `delivered` when a reply
 * reaches the visitor's page and `read` when the page is in view.
 */
export const webchat: ChannelDefinition = {
  type: "webchat",
  label: "Web chat",
  capabilities: {
    messageTypes: ["text"],
    deliveryReceipts: true,
    readReceipts: true,
    sessionWindowHours: null,
  },
  source: "Parley web chat: text only; receipts from the widget",
};
