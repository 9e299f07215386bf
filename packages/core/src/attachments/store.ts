import { attachmentContents, type Queryable } from "@parley/db";
import { eq } from "drizzle-orm";

/** Which file: its id and its tenant (an object store keys the bytes by all three). */
export interface AttachmentRef {
  id: string;
  organizationId: string;
  environment: string;
}

/**
 * Where attachment bytes live. The default keeps them in PostgreSQL, so every API and
 * worker process sharing the database sees every file with nothing else to run; the
 * S3-compatible store (s3-store.ts, `ATTACHMENTS_S3_BUCKET`) implements the same calls.
 * The API and the worker must use the same store: the worker reads what the API stored.
 */
export interface AttachmentStore {
  /** Called inside the transaction that records the attachment. */
  put(tx: Queryable, attachment: AttachmentRef, bytes: Buffer, contentType: string): Promise<void>;
  get(db: Queryable, attachment: AttachmentRef): Promise<Buffer | undefined>;
  /**
   * Deletes the bytes of attachments whose rows are gone. Absent when they go with the row
   * (PostgreSQL: `attachment_contents` cascades).
   */
  remove?(attachments: readonly AttachmentRef[]): Promise<void>;
  /**
   * A keyless, expiring address of the bytes served by the store itself
   * (`ATTACHMENTS_S3_PRESIGN=true`), given to providers instead of Parley's `/files/` link.
   */
  presignedUrl?(attachment: AttachmentRef, contentType: string, lifetimeMs: number): Promise<string>;
}

export const postgresAttachmentStore: AttachmentStore = {
  async put(tx, attachment, bytes) {
    await tx.insert(attachmentContents).values({ attachmentId: attachment.id, data: bytes });
  },
  async get(db, attachment) {
    const [row] = await db
      .select({ data: attachmentContents.data })
      .from(attachmentContents)
      .where(eq(attachmentContents.attachmentId, attachment.id));
    return row?.data;
  },
};
