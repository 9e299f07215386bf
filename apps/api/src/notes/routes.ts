import { api } from "@parley/schema";
import type { Router } from "express";
import type { AppContext } from "../context.js";
import { bindOperation } from "../http/route.js";
import { createNote, listNotesPage } from "./service.js";

export function noteRoutes(router: Router, app: AppContext) {
  bindOperation(router, app, api.notes.list, async ({ tenant, params, query }) => ({
    body: await listNotesPage(app, tenant, params.conversation_id, query),
  }));
  bindOperation(router, app, api.notes.create, async ({ tenant, params, body }) => ({
    body: await createNote(app, tenant, params.conversation_id, body),
  }));
}
