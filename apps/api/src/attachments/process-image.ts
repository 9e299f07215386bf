import { IMAGE_MAX_SIDE, IMAGE_RESIZE_ABOVE_BYTES } from "@parley/schema";
import sharp from "sharp";
import { validationError } from "../http/api-error.js";

const OUTPUT_FORMATS = { "image/jpeg": "jpeg", "image/png": "png", "image/webp": "webp" } as const;
type ImageType = keyof typeof OUTPUT_FORMATS;

export function isProcessedImage(contentType: string): contentType is ImageType {
  return contentType in OUTPUT_FORMATS;
}

/**
 * Re-encodes every image, which drops its metadata (EXIF, GPS, ICC comments) after the
 * orientation is applied to the pixels; above 400 KB it is also scaled so the longest
 * side is 1600 px. A file that does not decode as its declared type is refused.
 */
export async function processImage(bytes: Buffer, contentType: ImageType): Promise<Buffer> {
  const format = OUTPUT_FORMATS[contentType];
  try {
    const image = sharp(bytes, { failOn: "error" });
    const { format: actual } = await image.metadata();
    if (actual !== format) throw new Error(`decoded as ${actual ?? "nothing"}`);
    let pipeline = image.rotate();
    if (bytes.length > IMAGE_RESIZE_ABOVE_BYTES) {
      pipeline = pipeline.resize({
        width: IMAGE_MAX_SIDE,
        height: IMAGE_MAX_SIDE,
        fit: "inside",
        withoutEnlargement: true,
      });
    }
    return await pipeline.toFormat(format).toBuffer();
  } catch {
    throw validationError("file", `is not a valid ${contentType} image`);
  }
}
