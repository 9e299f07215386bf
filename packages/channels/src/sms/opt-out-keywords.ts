/**
 * The standard English opt-out and opt-in keywords of US/Canadian SMS, as Twilio handles them
 * by default (https://www.twilio.com/docs/messaging/tutorials/advanced-opt-out and Twilio's
 * "support for opt-out keywords" article). Provider-neutral: any SMS provider's inbound text
 * can be read with `smsOptOutKeyword`.
 */
export const SMS_OPT_OUT_KEYWORDS: readonly string[] = [
  "STOP",
  "STOPALL",
  "UNSUBSCRIBE",
  "CANCEL",
  "END",
  "QUIT",
  "REVOKE",
  "OPTOUT",
];

export const SMS_OPT_IN_KEYWORDS: readonly string[] = ["START", "YES", "UNSTOP"];

export type SmsOptOutKeyword = "stop" | "start";

/**
 * Whether an inbound text opts the sender out (`stop`) or back in (`start`). Only a message
 * that is the keyword alone counts (any case, surrounding spaces ignored): "STOP PLEASE" or
 * "please cancel" do not. The provider's own verdict wins when it gives one: Twilio's
 * `OptOutType` (`STOP`, `START`, `HELP`: set when Advanced Opt-Out matched a keyword, its
 * custom ones included); `HELP` is neither; any other value is ignored.
 */
export function smsOptOutKeyword(
  body: string | null | undefined,
  providerVerdict?: string | null,
): SmsOptOutKeyword | null {
  const verdict = providerVerdict?.trim().toUpperCase();
  if (verdict === "STOP") return "stop";
  if (verdict === "START") return "start";
  if (verdict === "HELP") return null;
  const word = (body ?? "").trim().toUpperCase();
  if (SMS_OPT_OUT_KEYWORDS.includes(word)) return "stop";
  if (SMS_OPT_IN_KEYWORDS.includes(word)) return "start";
  return null;
}
