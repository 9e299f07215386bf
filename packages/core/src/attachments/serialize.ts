import type { attachments } from "@parley/db";
import type { Attachment } from "@parley/schema";
import { apiTimestamp } from "../serialize/timestamp.js";

export type AttachmentRow = typeof attachments.$inferSelect;

/** `baseUrl` is the public address of the server, without `/v1`. */
export function attachmentContentUrl(baseUrl: string, attachmentId: string): string {
  return `${baseUrl}/v1/attachments/${attachmentId}/content`;
}

export function serializeAttachment(baseUrl: string, row: AttachmentRow): Attachment {
  return {
    object: "attachment",
    id: row.id,
    filename: row.filename,
    content_type: row.contentType,
    size: row.size,
    url: attachmentContentUrl(baseUrl, row.id),
    expires_at: apiTimestamp(row.expiresAt),
    created_at: apiTimestamp(row.createdAt),
  };
}
