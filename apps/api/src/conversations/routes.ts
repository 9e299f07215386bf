import { api } from "@parley/schema";
import type { Router } from "express";
import type { AppContext } from "../context.js";
import { bindOperation } from "../http/route.js";
import { setAgentTyping } from "../webchat/typing.js";
import {
  assignConversation,
  closeConversation,
  createConversation,
  getConversation,
  listConversationsPage,
  reopenConversation,
  tagConversation,
  unassignConversation,
  updateConversation,
} from "./service.js";

export function conversationRoutes(router: Router, app: AppContext) {
  const { conversations } = api;
  bindOperation(router, app, conversations.list, async ({ tenant, query }) => ({
    body: await listConversationsPage(app, tenant, query),
  }));
  bindOperation(router, app, conversations.create, async ({ app: scoped, tenant, body }) => {
    const { conversation, created } = await createConversation(scoped, tenant, body);
    return { status: created ? 201 : 200, body: conversation };
  });
  bindOperation(router, app, conversations.get, async ({ tenant, params }) => ({
    body: await getConversation(app, tenant, params.conversation_id),
  }));
  bindOperation(router, app, conversations.update, async ({ tenant, params, body }) => ({
    body: await updateConversation(app, tenant, params.conversation_id, body),
  }));
  bindOperation(router, app, conversations.close, async ({ tenant, params }) => ({
    body: await closeConversation(app, tenant, params.conversation_id),
  }));
  bindOperation(router, app, conversations.reopen, async ({ tenant, params }) => ({
    body: await reopenConversation(app, tenant, params.conversation_id),
  }));
  bindOperation(router, app, conversations.assign, async ({ tenant, params, body }) => ({
    body: await assignConversation(app, tenant, params.conversation_id, body),
  }));
  bindOperation(router, app, conversations.unassign, async ({ tenant, params }) => ({
    body: await unassignConversation(app, tenant, params.conversation_id),
  }));
  bindOperation(router, app, conversations.typing, async ({ tenant, params, body }) => ({
    body: await setAgentTyping(app, tenant, params.conversation_id, body.typing),
  }));
  bindOperation(router, app, conversations.addTag, async ({ tenant, params, body }) => ({
    body: await tagConversation(app, tenant, params.conversation_id, { add: body.tag_id }),
  }));
  bindOperation(router, app, conversations.removeTag, async ({ tenant, params }) => ({
    body: await tagConversation(app, tenant, params.conversation_id, { remove: params.tag_id }),
  }));
}
