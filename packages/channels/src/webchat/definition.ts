import type { ChannelDefinition } from "../capabilities.js";

/** Parley's web chat widget carries text only, and reports nothing back. */
export const webchat: ChannelDefinition = {
  type: "webchat",
  label: "Web chat",
  capabilities: {
    messageTypes: ["text"],
    deliveryReceipts: false,
    readReceipts: false,
    sessionWindowHours: null,
  },
  source: "Parley web chat: text only",
};
