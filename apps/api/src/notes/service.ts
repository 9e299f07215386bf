import { newId, notes, type Queryable } from "@parley/db";
import type { api, Note, OperationInput } from "@parley/schema";
import { and, desc, eq } from "drizzle-orm";
import type { AppContext } from "../context.js";
import { type ConversationLock, findConversation } from "../conversations/queries.js";
import { notFound } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { afterPosition, listKeyOf, toPage } from "../http/pagination.js";

type NoteRow = typeof notes.$inferSelect;
type CreateInput = OperationInput<typeof api.notes.create>["body"];
type ListQuery = OperationInput<typeof api.notes.list>["query"];

export function serializeNote(row: NoteRow): Note {
  return {
    object: "note",
    id: row.id,
    conversation_id: row.conversationId,
    body: row.body,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
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
  conversationId: string,
  input: CreateInput,
): Promise<Note> {
  return app.db.transaction(async (tx) => {
    // Held against a concurrent delete (of the contact) until the note is in.
    const conversation = await requireConversation(tx, tenant, conversationId, "key share");
    const [row] = await tx
      .insert(notes)
      .values({ id: newId("note"), ...tenant, conversationId: conversation.id, body: input.body })
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
    .where(and(eq(notes.conversationId, conversation.id), afterPosition(notes, after)))
    .orderBy(desc(notes.createdAt), desc(notes.id))
    .limit(query.limit + 1);
  return toPage(rows, query.limit, { codec: app.cursors, listKey }, (page) => page.map(serializeNote));
}
