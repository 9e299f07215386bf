import { IMAGE_MAX_SIDE, IMAGE_RESIZE_ABOVE_BYTES } from "@parley/schema";
import sharp from "sharp";
import { validationError } from "../http/api-error.js";

const OUTPUT_FORMATS = { "image/jpeg": "jpeg", "image/png": "png", "image/webp": "webp" } as const;
type ImageType = keyof typeof OUTPUT_FORMATS;

export function isProcessedImage(contentType: string): contentType is ImageType {
  return contentType in OUTPUT_FORMATS;
}

/** The pixels sharp decodes at most, its own default (16383 × 16383) spelled out. */
const MAX_INPUT_PIXELS = 16383 * 16383;
/**
 * A file of 400 KB or less is re-encoded at full size, and decoding costs by pixels, not
 * bytes: a 34-byte WebP can declare 7000 × 7000 pixels and take seconds of CPU, a 10 KB
 * one 16383 × 16383 and a minute. No photo or screenshot that small has more pixels
 * than this; a decompression bomb does.
 */
const MAX_UNSCALED_PIXELS = 25_000_000;

/**
 * Re-encodes every image, which drops its metadata (EXIF, GPS, ICC comments) after the
 * orientation is applied to the pixels; above 400 KB it is also scaled so the longest
 * side is 1600 px. A file that does not decode as its declared type is refused, and so
 * is one declaring more pixels than can be decoded safely.
 */
export async function processImage(bytes: Buffer, contentType: ImageType): Promise<Buffer> {
  const format = OUTPUT_FORMATS[contentType];
  const pixelLimit = bytes.length > IMAGE_RESIZE_ABOVE_BYTES ? MAX_INPUT_PIXELS : MAX_UNSCALED_PIXELS;
  try {
    const image = sharp(bytes, { failOn: "error", limitInputPixels: pixelLimit });
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
  } catch (error) {
    if (error instanceof Error && /pixel limit/i.test(error.message)) {
      throw validationError("file", `has more pixels than can be processed (at most ${pixelLimit} for this file size)`);
    }
    throw validationError("file", `is not a valid ${contentType} image`);
  }
}
