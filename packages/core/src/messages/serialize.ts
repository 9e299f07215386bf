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

/**
 * `JSON.stringify(serializeMessage(baseUrl, row, undefined))` for a message without an
 * attachment, written as text directly: the same bytes (serialize.test.ts holds them to
 * it), without building the object and walking it. A page read the first time writes 25;
 * the generic walk was a fifth of such a page's CPU in the API (bench/notebook.md).
 */
export function messageJsonText(row: MessageRow): string {
  const error =
    row.status === "failed"
      ? `{"code":${JSON.stringify(row.errorCode ?? "unknown")},"message":${JSON.stringify(row.errorMessage ?? "")}}`
      : "null";
  const sms =
    row.smsSegments !== null && row.smsEncoding !== null
      ? `{"segments":${JSON.stringify(row.smsSegments)},"encoding":${JSON.stringify(row.smsEncoding)}}`
      : "null";
  return (
    `{"object":"message","id":${JSON.stringify(row.id)},"conversation_id":${JSON.stringify(row.conversationId)}` +
    `,"direction":${JSON.stringify(row.direction)},"type":${JSON.stringify(row.type)}` +
    `,"text":${jsonOrNull(row.text)},"attachment":null,"metadata":${JSON.stringify(row.metadata)}` +
    `,"status":${jsonOrNull(row.status)},"error":${error},"authentication":${jsonOrNull(row.authentication)}` +
    `,"sms":${sms},"created_at":"${apiTimestamp(row.createdAt)}","updated_at":"${apiTimestamp(row.updatedAt)}"}`
  );
}

function jsonOrNull(value: unknown): string {
  return value === null || value === undefined ? "null" : JSON.stringify(value);
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
