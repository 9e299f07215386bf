import { z } from "zod";
import { timestamp } from "../primitives.js";

export {
  acceptedUploadTypes,
  cannotCarryMessage,
  MAX_UPLOAD_BYTES,
  type MediaKind,
  mediaKindOf,
  mediaKinds,
  uploadTypesByExtension,
} from "./upload-types.js";

/** Images above this are scaled so the longest side is at most `IMAGE_MAX_SIDE`. */
export const IMAGE_RESIZE_ABOVE_BYTES = 400 * 1024;
export const IMAGE_MAX_SIDE = 1600;
export const ATTACHMENT_LIFETIME_HOURS = 24;

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
