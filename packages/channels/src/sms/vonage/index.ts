// Vonage Messages API for the `sms` channel type (issue 40): settings, application JWTs,
// the send client and adapter, signed webhook verification and parsing. See NOTES.md.
export { isVonageCredentialRefusal, VONAGE_SMS_MAX_TEXT, vonageSmsAdapter } from "./adapter.js";
export {
  createVonageClient,
  type SmsToSend,
  VONAGE_API_BASE_URL,
  type VonageClient,
  type VonageCredentials,
  type VonageOptions,
  vonageUrl,
} from "./client.js";
export { checkVonageCredentials } from "./credential-check.js";
export {
  problemCode,
  problemOf,
  VONAGE_UNAUTHORIZED,
  VonageApiError,
  VonageAuthError,
  type VonageProblem,
  vonageFailure,
} from "./errors.js";
export { type ApplicationJwtInput, signApplicationJwt, VONAGE_JWT_TTL_SECONDS, VonageKeyError } from "./jwt.js";
export { fromVonageNumber, toVonageNumber } from "./numbers.js";
export {
  normalisePrivateKey,
  VONAGE_API_KEY_MESSAGES_PER_SECOND,
  VONAGE_SMS_SECRET_SETTINGS,
  VONAGE_US_LONG_NUMBER_MESSAGES_PER_SECOND,
  type VonageSmsSettings,
  vonagePace,
  vonageSmsProvider,
  vonageSmsSettings,
} from "./settings.js";
export {
  VONAGE_WEBHOOK_MAX_AGE_SECONDS,
  type VonageSignatureCheck,
  type VonageSignatureFailure,
  type VonageSignatureOptions,
  type VonageWebhookClaims,
  verifyVonageSignature,
} from "./signature.js";
export {
  parseVonageWebhook,
  type VonageDeliveryStatus,
  type VonageWebhookItem,
  vonageWebhookHints,
} from "./webhook.js";
