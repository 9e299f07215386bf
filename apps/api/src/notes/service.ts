import { apiTimestamp } from "@parley/core";
import { inTenant, newId, noteDeletions, notes, type Queryable } from "@parley/db";
import type { api, Note, OperationInput } from "@parley/schema";
import { and, desc, eq } from "drizzle-orm";
import type { AppContext } from "../context.js";
import { type ConversationLock, findConversation } from "../conversations/queries.js";
import { ApiError, notFound } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { afterPosition, listKeyOf, toPage } from "../http/pagination.js";

type NoteRow = typeof notes.$inferSelect;
type CreateInput = OperationInput<typeof api.notes.create>["body"];
type UpdateInput = OperationInput<typeof api.notes.update>["body"];
type ListQuery = OperationInput<typeof api.notes.list>["query"];

export function serializeNote(row: NoteRow): Note {
  return {
    object: "note",
    id: row.id,
    conversation_id: row.conversationId,
    body: row.body,
    author_key_id: row.authorKeyId,
    created_at: apiTimestamp(row.createdAt),
    updated_at: apiTimestamp(row.updatedAt),
  };
}

async function requireConversation(db: Queryable, tenant: Tenant, id: string, lock?: ConversationLock) {
  const found = await findConversation(db, tenant, id, lock);
  if (!found) throw notFound("conversation", id);
  return found.conversation;
}

/** Notes are internal: stored beside the conversation, never among its messages, never delivered. */
export async function createNote(
  app: AppContext,
  tenant: Tenant,
  authorKeyId: string,
  conversationId: string,
  input: CreateInput,
): Promise<Note> {
  return app.db.transaction(async (tx) => {
    // Held against a concurrent delete (of the contact) until the note is in.
    const conversation = await requireConversation(tx, tenant, conversationId, "key share");
    const [row] = await tx
      .insert(notes)
      .values({ id: newId("note"), ...tenant, conversationId: conversation.id, body: input.body, authorKeyId })
      .returning();
    if (!row) throw new Error("note insert returned nothing");
    return serializeNote(row);
  });
}

export async function listNotesPage(app: AppContext, tenant: Tenant, conversationId: string, query: ListQuery) {
  const conversation = await requireConversation(app.db, tenant, conversationId);
  const listKey = listKeyOf("conversations.notes.list", tenant, conversation.id);
  const after = app.cursors.decode(listKey, query.after);
  const rows = await app.db
    .select()
    .from(notes)
    .where(and(inTenant(notes, tenant), eq(notes.conversationId, conversation.id), afterPosition(notes, after)))
    .orderBy(desc(notes.createdAt), desc(notes.id))
    .limit(query.limit + 1);
  return toPage(rows, query.limit, { codec: app.cursors, listKey }, (page) => page.map(serializeNote));
}

/**
 * The note of this conversation, locked for the change, and only for its author's key:
 * another key of the environment (which may read it) is 403, a note it cannot see 404.
 */
async function requireOwnNote(tx: Queryable, tenant: Tenant, keyId: string, conversationId: string, noteId: string) {
  const conversation = await requireConversation(tx, tenant, conversationId, "key share");
  const [row] = await tx
    .select()
    .from(notes)
    .where(and(inTenant(notes, tenant), eq(notes.conversationId, conversation.id), eq(notes.id, noteId)))
    .for("update");
  if (!row) throw notFound("note", noteId);
  if (row.authorKeyId !== keyId) {
    throw new ApiError("permission_denied", "Only the API key that wrote this note may change or delete it.");
  }
  return row;
}

export async function updateNote(
  app: AppContext,
  tenant: Tenant,
  keyId: string,
  ids: { conversationId: string; noteId: string },
  input: UpdateInput,
): Promise<Note> {
  return app.db.transaction(async (tx) => {
    const current = await requireOwnNote(tx, tenant, keyId, ids.conversationId, ids.noteId);
    const [row] = await tx
      .update(notes)
      .set({ ...(input.body !== undefined ? { body: input.body } : {}), updatedAt: new Date() })
      .where(and(inTenant(notes, tenant), eq(notes.id, current.id)))
      .returning();
    if (!row) throw notFound("note", ids.noteId);
    return serializeNote(row);
  });
}

/** The body goes; the record of who deleted which note, and when, stays (never the body). */
export async function deleteNote(
  app: AppContext,
  tenant: Tenant,
  keyId: string,
  ids: { conversationId: string; noteId: string },
) {
  const note = await app.db.transaction(async (tx) => {
    const current = await requireOwnNote(tx, tenant, keyId, ids.conversationId, ids.noteId);
    await tx.delete(notes).where(and(inTenant(notes, tenant), eq(notes.id, current.id)));
    await tx.insert(noteDeletions).values({
      noteId: current.id,
      ...tenant,
      conversationId: current.conversationId,
      authorKeyId: current.authorKeyId,
      deletedByKeyId: keyId,
      noteCreatedAt: current.createdAt,
    });
    return current;
  });
  app.logger.info(
    { noteId: note.id, conversationId: note.conversationId, keyId, organizationId: tenant.organizationId },
    "note deleted",
  );
  return { object: "note" as const, id: note.id, deleted: true as const };
}
