import type { attachments } from "@parley/db";
import type { Attachment } from "@parley/schema";

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
    expires_at: row.expiresAt.toISOString(),
    created_at: row.createdAt.toISOString(),
  };
}
