import { canCarry, channelCapabilities } from "@parley/channels";
import type { AttachmentRow } from "@parley/core";
import type { Queryable } from "@parley/db";
import { type ChannelType, cannotCarryMessage, type MessageType, mediaKindOf } from "@parley/schema";
import { attachmentNotFound, findAvailableAttachment } from "../attachments/service.js";
import { ApiError, validationError } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";

export interface MessageContent {
  type: MessageType;
  text?: string | undefined;
  attachment_id?: string | undefined;
}

/**
 * The rules a message's content must pass on its conversation's channel, outbound and
 * simulated inbound alike, checked before anything is stored. Returns the attachment of
 * a media message, held (FOR KEY SHARE) until the caller's transaction ends.
 */
export async function checkMessageContent(
  tx: Queryable,
  tenant: Tenant,
  channel: { type: ChannelType; settings: Record<string, unknown> | null } | null,
  content: MessageContent,
): Promise<{ type: Exclude<MessageType, "template">; attachment: AttachmentRow | undefined }> {
  const { type } = content;
  if (type === "template") {
    throw new ApiError("unsupported_message_type", "Template messages are not supported on any channel.", {
      param: "type",
    });
  }
  if (channel && !canCarry(channelCapabilities(channel), type)) {
    throw new ApiError("unsupported_message_type", cannotCarryMessage(channel.type, type), { param: "type" });
  }
  if (type === "text") {
    if (content.text === undefined) throw validationError("text", "is required for a text message");
    if (content.attachment_id !== undefined) throw validationError("attachment_id", "is only for media messages");
    return { type, attachment: undefined };
  }
  if (content.attachment_id === undefined) {
    throw validationError("attachment_id", `is required for a ${type} message: upload the file first`);
  }
  const attachment = await findAvailableAttachment(tx, tenant, content.attachment_id, true);
  if (!attachment) throw attachmentNotFound(content.attachment_id);
  const kind = mediaKindOf(attachment.contentType);
  if (kind !== type) {
    throw new ApiError(
      "attachment_type_mismatch",
      `The attachment is ${attachment.contentType} (${kind ?? "unknown"}), which cannot be sent as '${type}'.`,
      { param: "type" },
    );
  }
  return { type, attachment };
}
