// Twilio Programmable Messaging for the `sms` channel type: settings, REST client, delivery
// adapter, webhook signature and parsing. Wired into the registry, API and worker elsewhere.
export {
  TWILIO_WEBHOOK_PATH,
  type TwilioAdapterOptions,
  twilioSmsAdapter,
  twilioWebhookUrl,
} from "./adapter.js";
export { checkTwilioCredentials } from "./check.js";
export {
  type CheckedAccount,
  createTwilioClient,
  defaultTwilioOptions,
  isTwilioApiHost,
  type MediaDownload,
  type SendMessageInput,
  type SentMessage,
  TWILIO_API_BASE_URL,
  type TwilioClient,
  type TwilioOptions,
} from "./client.js";
export {
  isTwilioCredentialRefusal,
  TWILIO_AUTHENTICATE,
  TWILIO_CREDENTIAL_ERROR_CODES,
  TwilioApiError,
  TwilioAuthError,
  type TwilioErrorBody,
  type TwilioRefusal,
  twilioErrorOf,
  twilioFailure,
} from "./errors.js";
export { fetchTwilioInboundMedia, type TwilioInboundFile } from "./media.js";
export {
  TWILIO_SECRET_SETTINGS,
  type TwilioCredentials,
  type TwilioSenderKind,
  type TwilioSmsSettings,
  twilioCredentials,
  twilioPace,
  twilioProviderSettings,
  twilioSenderKind,
  twilioSmsSettings,
} from "./settings.js";
export { computeTwilioSignature, type TwilioParams, verifyTwilioSignature } from "./signature.js";
export {
  parseTwilioWebhook,
  type TwilioInboundMedia,
  type TwilioOptOutType,
  type TwilioParleyStatus,
  type TwilioWebhookEvent,
} from "./webhook.js";
