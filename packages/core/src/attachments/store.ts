import { attachmentContents, type Queryable } from "@parley/db";
import { eq } from "drizzle-orm";

/**
 * Where attachment bytes live. The default keeps them in PostgreSQL, so every API and
 * worker process sharing the database sees every file with nothing else to run; an
 * S3-compatible store implements the same three calls (see docs/guides/uploads.md).
 */
export interface AttachmentStore {
  /** Called inside the transaction that records the attachment. */
  put(tx: Queryable, attachmentId: string, bytes: Buffer): Promise<void>;
  get(db: Queryable, attachmentId: string): Promise<Buffer | undefined>;
}

export const postgresAttachmentStore: AttachmentStore = {
  async put(tx, attachmentId, bytes) {
    await tx.insert(attachmentContents).values({ attachmentId, data: bytes });
  },
  async get(db, attachmentId) {
    const [row] = await db
      .select({ data: attachmentContents.data })
      .from(attachmentContents)
      .where(eq(attachmentContents.attachmentId, attachmentId));
    return row?.data;
  },
};
