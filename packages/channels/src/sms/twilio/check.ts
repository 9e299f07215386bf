import { TemporaryChannelError } from "../../adapter.js";
import { CredentialCheckError } from "../../credentials.js";
import { createTwilioClient, type TwilioOptions } from "./client.js";
import { TwilioApiError } from "./errors.js";
import { twilioSmsSettings } from "./settings.js";

/**
 * Asks Twilio whether a channel's settings work, before they are stored (`pnpm admin
 * connect-channel --type sms --setting provider=twilio ...`): see `TwilioClient.checkAccount`.
 * Resolves when Twilio accepted; throws a `CredentialCheckError` with Twilio's answer (or
 * the names of the invalid settings), never a secret.
 */
export async function checkTwilioCredentials(options: TwilioOptions, settings: Record<string, unknown>): Promise<void> {
  const parsed = twilioSmsSettings.safeParse(settings);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join(".") || "settings"}: ${issue.message}`);
    throw new CredentialCheckError(`The Twilio settings are invalid (${problems.join("; ")})`);
  }
  const accountSid = parsed.data.account_sid;
  const how = parsed.data.api_key_sid === undefined ? "the Auth Token" : `API key ${parsed.data.api_key_sid}`;
  try {
    await createTwilioClient(options, parsed.data).checkAccount();
  } catch (error) {
    if (error instanceof TwilioApiError) {
      const code = error.code === null ? "" : ` (code ${error.code})`;
      throw new CredentialCheckError(`Twilio refused account ${accountSid} with ${how}: ${error.message}${code}`);
    }
    if (error instanceof TemporaryChannelError) throw new CredentialCheckError(error.message);
    throw error;
  }
}
