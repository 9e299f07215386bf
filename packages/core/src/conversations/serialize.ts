import type { conversations } from "@parley/db";
import type { ChannelType, Conversation } from "@parley/schema";
import { apiTimestamp } from "../serialize/timestamp.js";

export type ConversationRow = typeof conversations.$inferSelect;

export function serializeConversation(row: ConversationRow, channelType: ChannelType | null): Conversation {
  return {
    object: "conversation",
    id: row.id,
    status: row.status,
    contact_id: row.contactId,
    channel_id: row.channelId,
    channel_type: channelType,
    external_id: row.externalId,
    assigned_to: row.assignedUserId,
    team_id: row.teamId,
    metadata: row.metadata,
    unverified: row.unverified,
    closed_at: row.closedAt ? apiTimestamp(row.closedAt) : null,
    created_at: apiTimestamp(row.createdAt),
    updated_at: apiTimestamp(row.updatedAt),
  };
}
