import type { AttachmentRef } from "@parley/core";
import type { Task } from "graphile-worker";
import type { WorkerContext } from "../context.js";

/**
 * Deletes from the object store the files whose attachment rows `cleanup_expired` deleted:
 * queued by the same statement that deleted the rows, so a crash between the two loses
 * nothing, and retried by graphile-worker until the store answers. With the PostgreSQL
 * store (no `remove`) the bytes went with the rows and there is nothing to do.
 */
export const removeAttachmentObjects =
  (context: WorkerContext): Task =>
  async (payload) => {
    const attachments = attachmentsOf(payload);
    await context.keys.attachmentStore.remove?.(attachments);
  };

function attachmentsOf(payload: unknown): AttachmentRef[] {
  const list = (payload as { attachments?: unknown } | null)?.attachments;
  if (!Array.isArray(list)) throw new Error("remove_attachment_objects: the payload has no attachments");
  return list.map((item: unknown) => {
    const { id, organization_id, environment } = (item ?? {}) as Record<string, unknown>;
    if (typeof id !== "string" || typeof organization_id !== "string" || typeof environment !== "string") {
      throw new Error("remove_attachment_objects: an attachment without id, organization_id and environment");
    }
    return { id, organizationId: organization_id, environment };
  });
}
