import { z } from "zod";
import { timestamp } from "../primitives.js";

/** The media kinds a file can be sent as; each is also a message `type`. */
export const mediaKinds = ["image", "audio", "document", "video"] as const;
export type MediaKind = (typeof mediaKinds)[number];

/** The spec's table of accepted upload types, by the message type they can be sent as. */
export const acceptedUploadTypes: Record<MediaKind, readonly string[]> = {
  image: ["image/jpeg", "image/png", "image/webp"],
  audio: ["audio/aac", "audio/mp4", "audio/mpeg", "audio/amr", "audio/ogg"],
  document: [
    "application/pdf",
    "application/msword",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.ms-excel",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "text/plain",
  ],
  video: ["video/mp4", "video/3gpp"],
};

export { uploadTypesByExtension } from "./upload-types.js";

/** 16 MB (16 × 1024 × 1024 bytes) per file, any type. */
export const MAX_UPLOAD_BYTES = 16 * 1024 * 1024;
/** Images above this are scaled so the longest side is at most `IMAGE_MAX_SIDE`. */
export const IMAGE_RESIZE_ABOVE_BYTES = 400 * 1024;
export const IMAGE_MAX_SIDE = 1600;
export const ATTACHMENT_LIFETIME_HOURS = 24;

export function mediaKindOf(contentType: string): MediaKind | undefined {
  return mediaKinds.find((kind) => acceptedUploadTypes[kind].includes(contentType));
}

export const attachment = z.object({
  object: z.literal("attachment"),
  id: z.string(),
  filename: z.string(),
  content_type: z.string().describe("May differ from what was uploaded (image processing)"),
  size: z.number().int().describe("Bytes of the stored file; may differ from the uploaded size"),
  url: z.string().describe("Absolute address of the content endpoint; download it with your API key"),
  expires_at: timestamp.describe("24 hours after creation; a file sent in a message stays downloadable"),
  created_at: timestamp,
});
export type Attachment = z.infer<typeof attachment>;
