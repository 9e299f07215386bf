import { apiTimestamp } from "@parley/core";
import type { messages } from "@parley/db";
import type { Message, WebchatMessage } from "@parley/schema";

type MessageRow = Pick<typeof messages.$inferSelect, "id" | "direction" | "type" | "text" | "status" | "createdAt">;

/**
 * What a visitor may see of a message, field by field: the API's own serializer carries
 * the business's `metadata` and the provider's error details, which stay behind the API key.
 * A reply names the agent the conversation is assigned to (the name only, never the id or
 * address), as the visitor's panel shows it.
 */
export function visitorMessage(row: MessageRow, agentName: string | null = null): WebchatMessage {
  return {
    id: row.id,
    direction: row.direction,
    type: row.type,
    text: row.text,
    status: row.status,
    ...(row.direction === "outbound" ? { agent_name: agentName } : {}),
    created_at: apiTimestamp(row.createdAt),
  };
}

/** The same shape from an API message (the visitor's own, just ingested). */
export function visitorMessageOf(message: Message): WebchatMessage {
  return {
    id: message.id,
    direction: message.direction,
    type: message.type,
    text: message.text,
    status: message.status,
    created_at: message.created_at,
  };
}
