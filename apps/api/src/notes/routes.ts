import { api } from "@parley/schema";
import type { Router } from "express";
import type { AppContext } from "../context.js";
import { bindOperation } from "../http/route.js";
import { createNote, deleteNote, listNotesPage, updateNote } from "./service.js";

export function noteRoutes(router: Router, app: AppContext) {
  bindOperation(router, app, api.notes.list, async ({ tenant, params, query }) => ({
    body: await listNotesPage(app, tenant, params.conversation_id, query),
  }));
  bindOperation(router, app, api.notes.create, async ({ tenant, auth, params, body }) => ({
    body: await createNote(app, tenant, auth.keyId, params.conversation_id, body),
  }));
  bindOperation(router, app, api.notes.update, async ({ tenant, auth, params, body }) => ({
    body: await updateNote(
      app,
      tenant,
      auth.keyId,
      { conversationId: params.conversation_id, noteId: params.note_id },
      body,
    ),
  }));
  bindOperation(router, app, api.notes.delete, async ({ tenant, auth, params }) => ({
    body: await deleteNote(app, tenant, auth.keyId, { conversationId: params.conversation_id, noteId: params.note_id }),
  }));
}
