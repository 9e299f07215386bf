import {
  channels,
  conversations,
  inTenantPlaceholders,
  messages,
  type Queryable,
  reusableQuery,
  type TenantScope,
} from "@parley/db";
import type { Conversation } from "@parley/schema";
import { and, eq, inArray, sql } from "drizzle-orm";
import { serializeConversation } from "./serialize.js";

/** A conversation of the tenant as GET returns it, by id. */
export async function loadConversation(
  db: Queryable,
  tenant: TenantScope,
  conversationId: string,
): Promise<Conversation> {
  const [row] = await loadConversationQuery(db, { ...tenant, id: conversationId });
  if (!row) throw new Error(`conversation ${conversationId} not found`);
  return serializeConversation(row.conversation, row.channelType);
}

/** A conversation with its channel's type, what serializeConversation needs. */
function selectConversation(db: Queryable) {
  return db
    .select({ conversation: conversations, channelType: channels.type })
    .from(conversations)
    .leftJoin(channels, eq(channels.id, conversations.channelId));
}

// Every event about a message carries its conversation: built once (see reusableQuery).
const loadConversationQuery = reusableQuery((db) =>
  selectConversation(db)
    .where(and(inTenantPlaceholders(conversations), eq(conversations.id, sql.placeholder("id"))))
    .prepare("load_conversation"),
);

/**
 * The conversations of messages as GET returns them, by conversation id, in one statement:
 * read beside a change of the messages, whose conversations it does not change.
 */
export async function loadConversationsOfMessages(
  db: Queryable,
  messageIds: readonly string[],
): Promise<Map<string, Conversation>> {
  if (messageIds.length === 0) return new Map();
  const rows = await selectConversation(db).where(
    inArray(
      conversations.id,
      db
        .select({ id: messages.conversationId })
        .from(messages)
        .where(inArray(messages.id, [...messageIds])),
    ),
  );
  return new Map(rows.map((row) => [row.conversation.id, serializeConversation(row.conversation, row.channelType)]));
}
