import type { ChannelType } from "@parley/schema";
import nodemailer from "nodemailer";
import { type MetaOptions, TemporaryChannelError } from "./adapter.js";
import { MetaGraphError } from "./meta/errors.js";
import { createGraphClient } from "./meta/graph-client.js";
import { checkTwilioCredentials } from "./sms/twilio/check.js";
import { defaultTwilioOptions, type TwilioOptions } from "./sms/twilio/client.js";
import { checkVonageCredentials } from "./sms/vonage/credential-check.js";

/** The provider refused the credentials, or could not be asked: its answer, never a secret. */
export class CredentialCheckError extends Error {
  override name = "CredentialCheckError";
}

export interface CredentialCheckOptions {
  /** Where the Graph API is reached (`META_GRAPH_BASE_URL`, `META_GRAPH_API_VERSION`, `META_TIMEOUT_MS`). */
  meta: MetaOptions;
  /** Connecting to the SMTP relay, its greeting and each reply. */
  smtpTimeoutMs?: number;
  /** Where Twilio's REST API is reached (`TWILIO_API_BASE_URL`); Twilio's own when absent. */
  twilio?: TwilioOptions;
}

/** The Graph object each Meta channel type is: reading it needs a token that may act for it. */
const META_ACCOUNT_SETTING: Partial<Record<ChannelType, string>> = {
  whatsapp: "phone_number_id",
  messenger: "page_id",
  instagram: "instagram_account_id",
};

/**
 * Asks the provider whether a channel's settings work, before they are stored: Meta's
 * `GET /{phone_number_id}` (or Page, or Instagram account) with the access token; the SMTP
 * relay's `EHLO` and `AUTH` with `smtp_url`'s credentials; Twilio's Account (or, with an
 * API key, its messages) with the channel's credentials; a Vonage application's private key
 * signing a token its public key verifies (Vonage has no read a JWT may make). Resolves
 * when the provider accepted; throws a `CredentialCheckError` with its answer otherwise.
 * Other providers (web chat) have nothing to check.
 */
export async function checkCredentials(
  type: ChannelType,
  provider: string,
  settings: Record<string, unknown>,
  options: CredentialCheckOptions,
): Promise<void> {
  const accountSetting = META_ACCOUNT_SETTING[type];
  if (provider === "meta" && accountSetting) {
    return checkMeta(String(settings[accountSetting] ?? ""), String(settings.access_token ?? ""), options.meta);
  }
  if (provider === "smtp" && type === "email") {
    return checkSmtp(String(settings.smtp_url ?? ""), options.smtpTimeoutMs ?? 15_000);
  }
  if (provider === "twilio" && type === "sms") {
    return checkTwilioCredentials(options.twilio ?? defaultTwilioOptions, settings);
  }
  if (provider === "vonage" && type === "sms") return checkVonageCredentials(settings);
}

async function checkMeta(accountId: string, accessToken: string, meta: MetaOptions): Promise<void> {
  try {
    const answer = await createGraphClient(meta, accessToken).get(encodeURIComponent(accountId));
    const id = typeof answer === "object" && answer !== null ? (answer as { id?: unknown }).id : undefined;
    if (id !== undefined && String(id) !== accountId) {
      throw new CredentialCheckError(`Meta answered for object ${String(id)}, not ${accountId}`);
    }
  } catch (error) {
    if (error instanceof CredentialCheckError) throw error;
    if (error instanceof MetaGraphError) {
      throw new CredentialCheckError(
        `Meta refused GET /${accountId} with this access token: ${error.message} (code ${error.code})`,
      );
    }
    if (error instanceof TemporaryChannelError) throw new CredentialCheckError(error.message);
    throw error;
  }
}

/** `EHLO`, then `AUTH` when the URL carries credentials, then `QUIT`: nodemailer's `verify()`. */
async function checkSmtp(smtpUrl: string, timeoutMs: number): Promise<void> {
  const transport = nodemailer.createTransport({
    url: smtpUrl,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  });
  try {
    await transport.verify();
  } catch (error) {
    const failure = error as Error & { code?: string; response?: string };
    // The relay's own reply when there is one (`535 5.7.8 Authentication failed`); else the fault.
    const answer = failure.response ?? failure.message;
    const what = failure.code === "EAUTH" ? "refused the login" : "could not be used";
    throw new CredentialCheckError(`The SMTP relay ${what}: ${answer}`);
  } finally {
    transport.close();
  }
}
