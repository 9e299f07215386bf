import { attachments, type messages, type Queryable } from "@parley/db";
import type { Message } from "@parley/schema";
import { inArray } from "drizzle-orm";
import { type AttachmentRow, serializeAttachment } from "../attachments/serialize.js";

export type MessageRow = typeof messages.$inferSelect;

/** `baseUrl` is the public address of the server, for the attachment's absolute `url`. */
export function serializeMessage(baseUrl: string, row: MessageRow, attachment: AttachmentRow | undefined): Message {
  return {
    object: "message",
    id: row.id,
    conversation_id: row.conversationId,
    direction: row.direction,
    type: row.type,
    text: row.text,
    attachment: attachment ? serializeAttachment(baseUrl, attachment) : null,
    metadata: row.metadata,
    status: row.status,
    error: row.status === "failed" ? { code: row.errorCode ?? "unknown", message: row.errorMessage ?? "" } : null,
    authentication: row.authentication ?? null,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

export async function attachmentsByIds(db: Queryable, ids: readonly string[]): Promise<AttachmentRow[]> {
  if (ids.length === 0) return [];
  return db
    .select()
    .from(attachments)
    .where(inArray(attachments.id, [...ids]));
}

/** Messages as GET returns them, their attachments fetched in one query. */
export async function loadMessages(baseUrl: string, db: Queryable, rows: MessageRow[]): Promise<Message[]> {
  const ids = rows.flatMap((row) => (row.attachmentId ? [row.attachmentId] : []));
  const byId = new Map((await attachmentsByIds(db, ids)).map((attachment) => [attachment.id, attachment]));
  return rows.map((row) => serializeMessage(baseUrl, row, row.attachmentId ? byId.get(row.attachmentId) : undefined));
}
