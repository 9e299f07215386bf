import { isTwilioCredentialRefusal, isVonageCredentialRefusal } from "@parley/channels";
import { channels, type Queryable } from "@parley/db";
import { and, eq } from "drizzle-orm";

type ChannelRow = typeof channels.$inferSelect;

/** Meta's "access token expired or invalid" (OAuthException 190): no send works until it is replaced. */
const META_INVALID_TOKEN = "190";

/**
 * Each live provider's refusal of a channel's credentials, and why the channel needs
 * attention in words naming the provider and the fix.
 */
const CREDENTIAL_REFUSALS: Record<
  string,
  { refused: (error: { code: string }) => boolean; what: string; fix: string }
> = {
  meta: {
    refused: (error) => error.code === META_INVALID_TOKEN,
    what: "Meta refused the access token (code 190)",
    fix: "Update it with pnpm admin update-channel.",
  },
  twilio: {
    refused: isTwilioCredentialRefusal,
    what: "Twilio refused the channel's credentials (code 20003)",
    fix: "Update auth_token (or api_key_sid and api_key_secret) with pnpm admin update-channel.",
  },
  vonage: {
    refused: isVonageCredentialRefusal,
    what: "Vonage refused the application's credentials (HTTP 401)",
    fix: "Update application_id and private_key with pnpm admin update-channel.",
  },
};

/**
 * Marks an active channel `needs_attention` when a provider's refusal says its credentials
 * no longer work: a Meta token reported expired or revoked (190), Twilio's 401/20003, Vonage's
 * 401. `pnpm admin update-channel` with fresh credentials, or a reconnect, makes it `active`
 * again. Returns whether it marked.
 */
export async function noteProviderRefusal(
  db: Queryable,
  channel: Pick<ChannelRow, "id" | "provider" | "status">,
  error: { code: string; message: string },
): Promise<boolean> {
  const refusal = CREDENTIAL_REFUSALS[channel.provider];
  if (!refusal?.refused(error) || channel.status !== "active") return false;
  const reason = `${refusal.what}: ${error.message.slice(0, 500)} ${refusal.fix}`;
  const marked = await db
    .update(channels)
    .set({ status: "needs_attention", statusReason: reason, updatedAt: new Date() })
    .where(and(eq(channels.id, channel.id), eq(channels.status, "active")))
    .returning({ id: channels.id });
  return marked.length > 0;
}
