import { StartupError } from "@parley/db";
import type { AttachmentRef, AttachmentStore } from "./store.js";

/** `ATTACHMENTS_S3_*`: where the bytes go; credentials come from the standard AWS variables. */
export interface S3StoreOptions {
  bucket: string;
  /** An S3-compatible server (MinIO, R2, Ceph...): addressed path-style (`endpoint/bucket/key`). */
  endpoint?: string | undefined;
  region: string;
  /** Providers fetch files from pre-signed S3 URLs instead of Parley's `/files/` links. */
  presign: boolean;
}

/** S3's limit on the keys of one DeleteObjects request. */
const DELETE_BATCH = 1000;

/** `<organization>/<environment>/<attachment id>`: a tenant's files under one prefix. */
export function objectKeyOf(attachment: AttachmentRef): string {
  return `${attachment.organizationId}/${attachment.environment}/${attachment.id}`;
}

export interface S3AttachmentStore extends AttachmentStore {
  remove(attachments: readonly AttachmentRef[]): Promise<void>;
  /** At start: the bucket answers with these credentials; a one-line `StartupError` otherwise. */
  check(): Promise<void>;
  close(): void;
}

/**
 * Attachment bytes in an S3-compatible bucket, metadata in PostgreSQL. `put` uploads the
 * object inside the attachment's transaction, before it commits: a crash or a rollback in
 * between leaves an object without a row (never a row without bytes), which nothing
 * reads; the clean-up job deletes the objects of the rows it deletes (`remove`).
 *
 * The AWS SDK is loaded here, not when `@parley/core` is: about 25 MB and 300 ms that a
 * process on the PostgreSQL store never spends.
 */
export async function createS3AttachmentStore(options: S3StoreOptions): Promise<S3AttachmentStore> {
  // On Node 20 the SDK writes a seven-line NodeVersionSupportWarning to stderr when a client is
  // made: noise in every log, and it breaks the one-line start failures. docs/operations.md
  // says it instead (the SDK's releases after January 2027 need Node 22).
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
  const { DeleteObjectsCommand, GetObjectCommand, HeadBucketCommand, NoSuchKey, PutObjectCommand, S3Client } =
    await import("@aws-sdk/client-s3");
  const { getSignedUrl } = await import("@aws-sdk/s3-request-presigner");
  const client = new S3Client({
    region: options.region,
    ...(options.endpoint ? { endpoint: options.endpoint, forcePathStyle: true } : {}),
  });
  const Bucket = options.bucket;
  const store: S3AttachmentStore = {
    async put(_tx, attachment, bytes, contentType) {
      await client.send(
        new PutObjectCommand({ Bucket, Key: objectKeyOf(attachment), Body: bytes, ContentType: contentType }),
      );
    },
    async get(_db, attachment) {
      try {
        const object = await client.send(new GetObjectCommand({ Bucket, Key: objectKeyOf(attachment) }));
        if (!object.Body) return undefined;
        return Buffer.from(await object.Body.transformToByteArray());
      } catch (error) {
        if (error instanceof NoSuchKey) return undefined;
        throw error;
      }
    },
    async remove(attachments) {
      for (let start = 0; start < attachments.length; start += DELETE_BATCH) {
        const batch = attachments.slice(start, start + DELETE_BATCH);
        const result = await client.send(
          new DeleteObjectsCommand({
            Bucket,
            Delete: { Objects: batch.map((attachment) => ({ Key: objectKeyOf(attachment) })), Quiet: true },
          }),
        );
        // An object already gone is not an error (S3 answers success); anything else is retried.
        const failed = (result.Errors ?? []).filter((error) => error.Code !== "NoSuchKey");
        if (failed.length > 0) {
          throw new Error(`S3 refused to delete ${failed.length} object(s): ${failed[0]?.Code ?? "unknown"}`);
        }
      }
    },
    async check() {
      try {
        await client.send(new HeadBucketCommand({ Bucket }));
      } catch (error) {
        const { name, message, $metadata } = error as Error & { $metadata?: { httpStatusCode?: number } };
        const status = $metadata?.httpStatusCode ? ` (HTTP ${$metadata.httpStatusCode})` : "";
        throw new StartupError(
          `The bucket of ATTACHMENTS_S3_BUCKET (${Bucket}) cannot be reached at ${options.endpoint ?? "AWS S3"}: ${name}${status}${name === message || !message ? "" : `: ${message}`}. Check the bucket, ATTACHMENTS_S3_ENDPOINT, ATTACHMENTS_S3_REGION and the AWS credentials.`,
        );
      }
    },
    close: () => client.destroy(),
  };
  if (options.presign) {
    store.presignedUrl = (attachment, contentType, lifetimeMs) =>
      getSignedUrl(
        client,
        new GetObjectCommand({ Bucket, Key: objectKeyOf(attachment), ResponseContentType: contentType }),
        { expiresIn: Math.max(1, Math.floor(lifetimeMs / 1000)) },
      );
  }
  return store;
}
