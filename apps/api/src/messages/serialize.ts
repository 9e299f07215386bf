import type { Queryable } from "@parley/db";
import type { Message } from "@parley/schema";
import { type AttachmentRow, serializeAttachment } from "../attachments/service.js";
import type { AppContext } from "../context.js";
import { attachmentsByIds, type MessageRow } from "./queries.js";

export function serializeMessage(app: AppContext, row: MessageRow, attachment: AttachmentRow | undefined): Message {
  return {
    object: "message",
    id: row.id,
    conversation_id: row.conversationId,
    direction: row.direction,
    type: row.type,
    text: row.text,
    attachment: attachment ? serializeAttachment(app, attachment) : null,
    metadata: row.metadata,
    status: row.status,
    error: row.status === "failed" ? { code: row.errorCode ?? "unknown", message: row.errorMessage ?? "" } : null,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/** Messages as GET returns them, their attachments fetched in one query. */
export async function loadMessages(app: AppContext, db: Queryable, rows: MessageRow[]): Promise<Message[]> {
  const ids = rows.flatMap((row) => (row.attachmentId ? [row.attachmentId] : []));
  const byId = new Map((await attachmentsByIds(db, ids)).map((attachment) => [attachment.id, attachment]));
  return rows.map((row) => serializeMessage(app, row, row.attachmentId ? byId.get(row.attachmentId) : undefined));
}
