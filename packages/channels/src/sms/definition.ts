import type { ChannelCapabilities, ChannelDefinition } from "../capabilities.js";
import { smsSettingsOf } from "./settings.js";

const capabilities: ChannelCapabilities = {
  messageTypes: ["text", "image"],
  deliveryReceipts: true,
  readReceipts: false,
  sessionWindowHours: null,
};

/**
 * SMS, through Twilio or Vonage: text everywhere; an image (MMS) only from a number that
 * can send MMS (the channel's `mms` setting: Twilio's US and Canadian numbers); the
 * carriers' delivery receipts report `delivered` or `failed`; nothing reports reading; no
 * window, but a contact who replied STOP is not written to until START.
 */
export const sms: ChannelDefinition = {
  type: "sms",
  label: "SMS",
  capabilities,
  capabilitiesOf(settings) {
    if (smsSettingsOf(settings).mms) return capabilities;
    return { ...capabilities, messageTypes: ["text"] };
  },
  source:
    "Twilio Programmable Messaging and Vonage SMS: text (GSM-7 or UCS-2, in segments), MMS images on numbers that can send them, delivery receipts",
};
