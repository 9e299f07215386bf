import type { ChannelDefinition } from "../capabilities.js";

/**
 * Email over SMTP: a body with any file attached; SMTP only reports that the relay
 * accepted the message (`sent`), not arrival or reading; no window.
 */
export const email: ChannelDefinition = {
  type: "email",
  label: "Email (SMTP)",
  capabilities: {
    messageTypes: ["text", "image", "video", "audio", "document"],
    deliveryReceipts: false,
    readReceipts: false,
    sessionWindowHours: null,
  },
  source: "SMTP (RFC 5321) with MIME attachments: acceptance by the relay is the last observable state",
};
