import { api } from "@parley/schema";
import type { Router } from "express";
import type { AppContext } from "../context.js";
import { bindOperation } from "../http/route.js";
import { findSendTarget, type SendTarget } from "./queries.js";
import { getMessage, listMessagesPage, sendMessage } from "./service.js";

export function messageRoutes(router: Router, app: AppContext) {
  bindOperation<typeof api.messages.send, SendTarget | undefined>(
    router,
    app,
    api.messages.send,
    async ({ app: scoped, tenant, body, prefetched }) => {
      const { message, written, committed } = await sendMessage(scoped, tenant, body, prefetched);
      return { body: message, written, committed };
    },
    {
      prefetch: (db, { tenant, body }) => findSendTarget(db, tenant, body.conversation_id),
      // sendMessage refuses before it stores anything.
      groupCommit: true,
    },
  );
  bindOperation(router, app, api.messages.get, async ({ tenant, params }) => ({
    body: await getMessage(app, tenant, params.message_id),
  }));
  bindOperation(router, app, api.messages.list, async ({ tenant, params, query }) => ({
    body: await listMessagesPage(app, tenant, params.conversation_id, query),
  }));
}
