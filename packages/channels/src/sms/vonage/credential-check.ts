import { createPublicKey } from "node:crypto";
import { jwtVerify } from "jose";
import { CredentialCheckError } from "../../credentials.js";
import { signApplicationJwt, VonageKeyError } from "./jwt.js";
import { settingsProblem, vonageSmsSettings } from "./settings.js";

/**
 * What `pnpm admin connect-channel` can check of a Vonage channel before storing it, without
 * sending anything: the settings parse, and the private key signs an application JWT that its
 * own public key verifies, carrying the application id.
 *
 * Vonage offers no read that an application JWT authenticates and that proves the pairing of
 * application id and key: the Applications API (`GET /v2/applications/{id}`) takes the
 * account's API key and secret, not a JWT, and the Messages API's only calls send or update
 * messages. A wrong pairing shows on the first send as a 401, which marks the channel
 * `needs_attention`. Resolves when the settings are usable; throws a `CredentialCheckError`
 * naming what is wrong (never a secret's value) otherwise.
 */
export async function checkVonageCredentials(settings: Record<string, unknown>): Promise<void> {
  const parsed = vonageSmsSettings.safeParse(settings);
  if (!parsed.success) throw new CredentialCheckError(settingsProblem(parsed.error));
  const { application_id: applicationId, private_key: privateKey } = parsed.data;
  try {
    const token = await signApplicationJwt({ applicationId, privateKey });
    const { payload } = await jwtVerify(token, createPublicKey(privateKey), { algorithms: ["RS256"] });
    if (payload.application_id !== applicationId) {
      throw new CredentialCheckError("The signed token does not carry the application id");
    }
  } catch (error) {
    if (error instanceof CredentialCheckError) throw error;
    const reason = error instanceof VonageKeyError ? error.message : "its own public key does not verify its signature";
    throw new CredentialCheckError(`The private key cannot sign Vonage application tokens: ${reason}`);
  }
}
