import type { MessageType } from "@parley/schema";

/** The message type a received file is stored as: by its content type's major part, else a document. */
export function inboundMediaType(contentType: string): Exclude<MessageType, "template" | "text"> {
  if (contentType.startsWith("image/")) return "image";
  if (contentType.startsWith("video/")) return "video";
  if (contentType.startsWith("audio/")) return "audio";
  return "document";
}
