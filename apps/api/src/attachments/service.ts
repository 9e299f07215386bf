import { serializeAttachment, verifyContentSignature } from "@parley/core";
import { attachments, inTenant, messages, newId, type Queryable } from "@parley/db";
import { ATTACHMENT_LIFETIME_HOURS, type Attachment } from "@parley/schema";
import { and, eq } from "drizzle-orm";
import type { Request, Response } from "express";
import type { AppContext } from "../context.js";
import { ApiError } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { attachmentDisposition } from "./content-disposition.js";
import { resolveUploadType } from "./content-type.js";
import { isProcessedImage, processImage } from "./process-image.js";
import { readUpload } from "./read-upload.js";

export function attachmentNotFound(id: string): ApiError {
  return new ApiError("attachment_not_found", `No such attachment: '${id}'`);
}

function selectAttachment(db: Queryable, tenant: Tenant, id: string) {
  return db
    .select()
    .from(attachments)
    .where(and(inTenant(attachments, tenant), eq(attachments.id, id)));
}

/**
 * An attachment a new message may use: of this tenant and not expired, even when another
 * message already uses it (a sent file stays downloadable, not reusable). A send holds
 * the row (`lockForUse`: FOR KEY SHARE) so the expiry clean-up cannot remove the file
 * under the message being stored.
 */
export async function findAvailableAttachment(
  db: Queryable,
  tenant: Tenant,
  id: string,
  lockForUse = false,
  now = new Date(),
) {
  const query = selectAttachment(db, tenant, id);
  const [row] = lockForUse ? await query.for("key share") : await query;
  return row && row.expiresAt > now ? row : undefined;
}

/** Downloadable: of this tenant, and either not expired or the file of a message that exists. */
async function findDownloadableAttachment(db: Queryable, tenant: Tenant, id: string, now = new Date()) {
  const [row] = await selectAttachment(db, tenant, id);
  if (!row) return undefined;
  if (row.expiresAt > now) return row;
  const [used] = await db
    .select({ id: messages.id })
    .from(messages)
    .where(and(inTenant(messages, tenant), eq(messages.attachmentId, row.id)))
    .limit(1);
  return used ? row : undefined;
}

export async function uploadAttachment(app: AppContext, tenant: Tenant, req: Request): Promise<Attachment> {
  const file = await readUpload(req);
  const resolved = resolveUploadType(file.declaredType, file.filename);
  if (!resolved) {
    throw new ApiError(
      "unsupported_media_type",
      `Files of type '${file.declaredType || "unknown"}' cannot be uploaded; see the accepted types in the reference.`,
    );
  }
  const bytes = isProcessedImage(resolved.contentType)
    ? await processImage(file.bytes, resolved.contentType, app.images)
    : file.bytes;
  const createdAt = new Date();
  const row = await app.db.transaction(async (tx) => {
    const [inserted] = await tx
      .insert(attachments)
      .values({
        id: newId("attachment"),
        ...tenant,
        filename: file.filename,
        contentType: resolved.contentType,
        size: bytes.length,
        createdAt,
        expiresAt: new Date(createdAt.getTime() + ATTACHMENT_LIFETIME_HOURS * 3_600_000),
      })
      .returning();
    if (!inserted) throw new Error("attachment insert returned nothing");
    await app.attachmentStore.put(tx, inserted, bytes, inserted.contentType);
    return inserted;
  });
  return serializeAttachment(app.publicBaseUrl(), row);
}

/**
 * The keyless link a provider fetches media by (`/files/{id}?expires&signature`): the
 * signature stands for the key, and an expired or altered link is not found.
 */
export async function sendSignedAttachmentContent(app: AppContext, req: Request, res: Response) {
  const id = String(req.params.attachment_id);
  if (!verifyContentSignature(app.contentUrlSecret, id, req.query.expires, req.query.signature)) {
    throw new ApiError("attachment_not_found", "This file link is invalid or has expired.");
  }
  const [row] = await app.db.select().from(attachments).where(eq(attachments.id, id));
  const bytes = row ? await app.attachmentStore.get(app.db, row) : undefined;
  if (!row || !bytes) throw attachmentNotFound(id);
  writeContent(res, row, bytes);
}

/** The bytes with their type, the original name and `Cache-Control: private`. */
export async function sendAttachmentContent(app: AppContext, tenant: Tenant, id: string, res: Response) {
  const row = await findDownloadableAttachment(app.db, tenant, id);
  const bytes = row ? await app.attachmentStore.get(app.db, row) : undefined;
  if (!row || !bytes) throw attachmentNotFound(id);
  writeContent(res, row, bytes);
}

function writeContent(res: Response, row: { contentType: string; filename: string }, bytes: Buffer) {
  res.status(200);
  res.setHeader("Content-Type", row.contentType);
  res.setHeader("Content-Disposition", attachmentDisposition(row.filename));
  res.setHeader("Cache-Control", "private");
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.end(bytes);
}
