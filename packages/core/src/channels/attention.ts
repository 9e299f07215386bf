import { channels, type Queryable } from "@parley/db";
import { and, eq } from "drizzle-orm";

type ChannelRow = typeof channels.$inferSelect;

/** Meta's "access token expired or invalid" (OAuthException 190): no send works until it is replaced. */
const META_INVALID_TOKEN = "190";

/**
 * Marks an active channel `needs_attention` when a provider's refusal says its credentials
 * no longer work (a Meta token reported expired or revoked). `pnpm admin update-channel`
 * with fresh credentials, or a reconnect, makes it `active` again. Returns whether it marked.
 */
export async function noteProviderRefusal(
  db: Queryable,
  channel: Pick<ChannelRow, "id" | "provider" | "status">,
  error: { code: string; message: string },
): Promise<boolean> {
  if (channel.provider !== "meta" || error.code !== META_INVALID_TOKEN || channel.status !== "active") return false;
  const reason = `Meta refused the access token (code 190): ${error.message.slice(0, 500)} Update it with pnpm admin update-channel.`;
  const marked = await db
    .update(channels)
    .set({ status: "needs_attention", statusReason: reason, updatedAt: new Date() })
    .where(and(eq(channels.id, channel.id), eq(channels.status, "active")))
    .returning({ id: channels.id });
  return marked.length > 0;
}
