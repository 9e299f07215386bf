import { index, pgTable, text, uniqueIndex } from "drizzle-orm/pg-core";
import { createdAt, tenantColumns, timestampMs } from "./columns.js";
import { contacts } from "./contacts.js";
import { channels, conversations } from "./conversations.js";

/**
 * A web chat visitor's session on one channel. The visitor holds the token (only its
 * hash is stored); the contact and conversation are created with the first message.
 */
export const webchatSessions = pgTable(
  "webchat_sessions",
  {
    id: text("id").primaryKey(),
    ...tenantColumns(),
    channelId: text("channel_id")
      .notNull()
      .references(() => channels.id, { onDelete: "cascade" }),
    tokenHash: text("token_hash").notNull(),
    visitorName: text("visitor_name"),
    visitorEmail: text("visitor_email"),
    contactId: text("contact_id").references(() => contacts.id, { onDelete: "set null" }),
    conversationId: text("conversation_id").references(() => conversations.id, { onDelete: "set null" }),
    createdAt: createdAt(),
    lastSeenAt: timestampMs("last_seen_at").notNull().defaultNow(),
    /**
     * An agent is typing in this session's conversation until then (`POST
     * /conversations/{id}/typing`); every API process's stream poller reads it.
     */
    agentTypingUntil: timestampMs("agent_typing_until"),
  },
  (t) => [
    uniqueIndex("webchat_sessions_token_key").on(t.tokenHash),
    index("webchat_sessions_channel_idx").on(t.channelId),
    index("webchat_sessions_conversation_idx").on(t.conversationId),
  ],
);
