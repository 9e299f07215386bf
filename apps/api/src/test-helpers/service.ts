import { ingestInboundMessage } from "@parley/core";
import type { api, Message, OperationInput } from "@parley/schema";
import { assertChannelConnected } from "../channels/status.js";
import type { AppContext } from "../context.js";
import { findConversation } from "../conversations/queries.js";
import { ApiError } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { checkMessageContent } from "../messages/content-rules.js";

type InboundInput = OperationInput<typeof api.testHelpers.inboundMessage>["body"];

/**
 * A message from the contact, recorded through the same ingestion code as a real
 * channel's inbound path: same content rules, session window, reopening and event.
 */
export async function simulateInboundMessage(app: AppContext, tenant: Tenant, input: InboundInput): Promise<Message> {
  return app.db.transaction(async (tx) => {
    const found = await findConversation(tx, tenant, input.conversation_id, "update");
    if (!found) {
      throw new ApiError("resource_not_found", `No such conversation: '${input.conversation_id}'`, {
        param: "conversation_id",
      });
    }
    assertChannelConnected(found.conversation.channelId, found.channelStatus);
    const { type, attachment } = await checkMessageContent(tx, tenant, found.channelType, input);
    return ingestInboundMessage(tx, app.publicBaseUrl(), tenant, {
      conversationId: found.conversation.id,
      type,
      text: input.text ?? null,
      attachment,
    });
  });
}
