import { webchatSessions } from "@parley/db";
import { TYPING_SECONDS, type TypingIndicator } from "@parley/schema";
import { eq } from "drizzle-orm";
import type { AppContext } from "../context.js";
import { findConversation } from "../conversations/queries.js";
import { ApiError, notFound } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";

/**
 * `POST /conversations/{id}/typing`: an agent is typing (or stopped). Kept on the web chat
 * session, where every API process's stream poller reads it (ReplyHub), until a few
 * seconds from now; nothing lasting, no event. A conversation whose visitor has ended the
 * chat has no session left: the signal is accepted and shown to nobody.
 */
export async function setAgentTyping(
  app: AppContext,
  tenant: Tenant,
  conversationId: string,
  typing: boolean,
): Promise<TypingIndicator> {
  const found = await findConversation(app.db, tenant, conversationId);
  if (!found) throw notFound("conversation", conversationId);
  if (found.channelType !== "webchat") {
    throw new ApiError(
      "invalid_state",
      found.channelType
        ? `Typing is shown on web chat only; this is a ${found.channelType} conversation.`
        : "Typing is shown on web chat only; this conversation has no channel.",
    );
  }
  const until = typing ? new Date(Date.now() + TYPING_SECONDS * 1000) : null;
  await app.db
    .update(webchatSessions)
    .set({ agentTypingUntil: until })
    .where(eq(webchatSessions.conversationId, found.conversation.id));
  return {
    object: "typing_indicator",
    conversation_id: found.conversation.id,
    typing,
    expires_at: until ? until.toISOString() : null,
  };
}
