export * from "./adapter.js";
export * from "./adapters.js";
export * from "./capabilities.js";
export * from "./credentials.js";
export { type InboundEmail, parseInboundEmail, threadHints } from "./email/inbound.js";
export { closeSmtpTransports } from "./email/smtp-adapter.js";
export * from "./meta/channel-key.js";
export { fetchInboundMedia } from "./meta/media.js";
export { isMetaSignatureHeader, signMetaPayload, verifyMetaSignature } from "./meta/signature.js";
export {
  type InboundMedia,
  type MetaChannelKey,
  type MetaWebhookItem,
  metaAccountIds,
  parseMetaWebhook,
} from "./meta/webhook.js";
export * from "./registry.js";
export type { SandboxOptions } from "./sandbox/adapter.js";
export { parseTriggers, type SandboxTriggers } from "./sandbox/triggers.js";
export * from "./settings.js";
export { sms } from "./sms/definition.js";
// Every SMS provider's inbound text (and the sandbox's) is read with it.
export {
  SMS_OPT_IN_KEYWORDS,
  SMS_OPT_OUT_KEYWORDS,
  type SmsOptOutKeyword,
  smsOptOutKeyword,
} from "./sms/opt-out-keywords.js";
export { SMS_OPT_OUT_REFUSALS, smsOptOutRefusal } from "./sms/opted-out.js";
export { DEFAULT_PHONE_REGION, normalizePhone, phoneDigitForms } from "./sms/phone.js";
export { countSegments, type SegmentCount, type SmsEncoding } from "./sms/segments.js";
export { type SmsChannelSettings, smsChannelSettings, smsSettingsOf } from "./sms/settings.js";
export { smsTextLimit } from "./sms/text-limit.js";
export * from "./sms/twilio/index.js";
export * from "./sms/vonage/index.js";
export * from "./webchat/settings.js";
