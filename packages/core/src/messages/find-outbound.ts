import { type channels, conversations, inTenant, messages, type Queryable } from "@parley/db";
import { and, eq, or } from "drizzle-orm";

type ChannelRow = typeof channels.$inferSelect;

/**
 * The outbound message of this channel a provider's receipt is about: by the provider's id
 * (Meta's wamid, Twilio's MessageSid...), or by Parley's own id where the provider echoes one
 * back (WhatsApp's `biz_opaque_callback_data`), which finds a message whose receipt beat the
 * send's answer. Undefined when the channel has no such message.
 */
export async function findOutboundMessage(
  db: Queryable,
  channel: Pick<ChannelRow, "id" | "organizationId" | "environment">,
  ids: { providerMessageId: string; messageId?: string | null },
): Promise<string | undefined> {
  const tenant = { organizationId: channel.organizationId, environment: channel.environment };
  const [row] = await db
    .select({ id: messages.id })
    .from(messages)
    .innerJoin(conversations, eq(conversations.id, messages.conversationId))
    .where(
      and(
        inTenant(messages, tenant),
        eq(conversations.channelId, channel.id),
        eq(messages.direction, "outbound"),
        or(
          eq(messages.providerMessageId, ids.providerMessageId),
          ids.messageId ? eq(messages.id, ids.messageId) : undefined,
        ),
      ),
    )
    .limit(1);
  return row?.id;
}
