import { attachments, inTenant, type messages, type Queryable, type TenantScope } from "@parley/db";
import type { Message } from "@parley/schema";
import { and, inArray } from "drizzle-orm";
import { type AttachmentRow, serializeAttachment } from "../attachments/serialize.js";
import { apiTimestamp } from "../serialize/timestamp.js";

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
    sms:
      row.smsSegments !== null && row.smsEncoding !== null
        ? { segments: row.smsSegments, encoding: row.smsEncoding }
        : null,
    created_at: apiTimestamp(row.createdAt),
    updated_at: apiTimestamp(row.updatedAt),
  };
}

export async function attachmentsByIds(
  db: Queryable,
  tenant: TenantScope,
  ids: readonly string[],
): Promise<AttachmentRow[]> {
  if (ids.length === 0) return [];
  return db
    .select()
    .from(attachments)
    .where(and(inTenant(attachments, tenant), inArray(attachments.id, [...ids])));
}

/** Messages as GET returns them, their attachments fetched in one query. */
export async function loadMessages(baseUrl: string, db: Queryable, rows: MessageRow[]): Promise<Message[]> {
  const ids = rows.flatMap((row) => (row.attachmentId ? [row.attachmentId] : []));
  const [first] = rows;
  // The rows of one call are of one tenant.
  const tenant = first ? { organizationId: first.organizationId, environment: first.environment } : undefined;
  const found = tenant ? await attachmentsByIds(db, tenant, ids) : [];
  const byId = new Map(found.map((attachment) => [attachment.id, attachment]));
  return rows.map((row) => serializeMessage(baseUrl, row, row.attachmentId ? byId.get(row.attachmentId) : undefined));
}
