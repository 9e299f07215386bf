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
export * from "./webchat/settings.js";
