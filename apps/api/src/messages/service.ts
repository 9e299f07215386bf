import { loadMessages, serializeMessage } from "@parley/core";
import { newId } from "@parley/db";
import type { api, Message, OperationInput } from "@parley/schema";
import { type AppContext, withTransaction } from "../context.js";
import { findConversation } from "../conversations/queries.js";
import { ApiError, notFound } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { listKeyOf, toPage } from "../http/pagination.js";
import { checkMessageContent } from "./content-rules.js";
import { enqueueDelivery, findMessage, insertMessage, listConversationMessages, retainAttachment } from "./queries.js";

type SendInput = OperationInput<typeof api.messages.send>["body"];
type ListQuery = OperationInput<typeof api.messages.list>["query"];

/**
 * Every refusal happens before anything is stored. An accepted send stores the message
 * and its delivery outbox row in one transaction, then answers at once: `queued` on a
 * channel, `null` on a manual record (stored, never delivered).
 */
export async function sendMessage(app: AppContext, tenant: Tenant, input: SendInput): Promise<Message> {
  return withTransaction(app, async (tx) => {
    // Held until the message is stored: a concurrent contact deletion waits or wins cleanly.
    const found = await findConversation(tx, tenant, input.conversation_id, "key share");
    if (!found) {
      throw new ApiError("resource_not_found", `No such conversation: '${input.conversation_id}'`, {
        param: "conversation_id",
      });
    }
    const { type, attachment } = await checkMessageContent(tx, tenant, found.channelType, input);
    if (attachment) await retainAttachment(tx, attachment.id);
    const conversation = found.conversation;
    const row = await insertMessage(tx, {
      id: newId("message"),
      ...tenant,
      conversationId: conversation.id,
      direction: "outbound",
      type,
      text: input.text ?? null,
      attachmentId: attachment?.id ?? null,
      metadata: input.metadata ?? {},
      status: conversation.channelId ? "queued" : null,
    });
    if (conversation.channelId) await enqueueDelivery(tx, row.id);
    return serializeMessage(app.publicBaseUrl(), row, attachment);
  });
}

export async function getMessage(app: AppContext, tenant: Tenant, id: string): Promise<Message> {
  const row = await findMessage(app.db, tenant, id);
  if (!row) throw notFound("message", id);
  const [message] = await loadMessages(app.publicBaseUrl(), app.db, [row]);
  if (!message) throw notFound("message", id);
  return message;
}

export async function listMessagesPage(app: AppContext, tenant: Tenant, conversationId: string, query: ListQuery) {
  const found = await findConversation(app.db, tenant, conversationId);
  if (!found) throw notFound("conversation", conversationId);
  const listKey = listKeyOf("conversations.messages.list", tenant, found.conversation.id);
  const after = app.cursors.decode(listKey, query.after);
  const filters = {
    direction: query.direction,
    createdAfter: query.created_after,
    createdBefore: query.created_before,
  };
  const rows = await listConversationMessages(app.db, found.conversation.id, filters, query.limit, after);
  const page = await loadMessages(app.publicBaseUrl(), app.db, rows.slice(0, query.limit));
  return toPage(rows, query.limit, { codec: app.cursors, listKey }, () => page);
}
