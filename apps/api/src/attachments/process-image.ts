import { IMAGE_MAX_SIDE, IMAGE_RESIZE_ABOVE_BYTES } from "@parley/schema";
import sharp, { type Metadata } from "sharp";
import { validationError } from "../http/api-error.js";
import type { ImageSlots } from "./image-slots.js";

const OUTPUT_FORMATS = { "image/jpeg": "jpeg", "image/png": "png", "image/webp": "webp" } as const;
type ImageType = keyof typeof OUTPUT_FORMATS;

export function isProcessedImage(contentType: string): contentType is ImageType {
  return contentType in OUTPUT_FORMATS;
}

export interface ImageLimits {
  /**
   * The most pixels (width × height) an image may declare, whatever its file size
   * (`IMAGE_MAX_PIXELS`, 25 megapixels by default). Decoding costs by pixels, not bytes:
   * a 1 MB PNG can declare 16383 × 16383 and take seconds of CPU and a GB of memory, a
   * 34-byte WebP 7000 × 7000. A camera's default photo (12 or 24 megapixels) stays below.
   */
  maxPixels: number;
  /** The process's image slots: at most so many images decode at once. */
  slots: ImageSlots;
}

/**
 * Re-encodes every image, which drops its metadata (EXIF, GPS, ICC comments) after the
 * orientation is applied to the pixels; above 400 KB it is also scaled so the longest
 * side is 1600 px. A file that does not decode as its declared type is refused, and so
 * is one declaring more pixels than `maxPixels`: read from its header, before any pixel
 * is decoded and without waiting for a slot.
 */
export async function processImage(bytes: Buffer, contentType: ImageType, limits: ImageLimits): Promise<Buffer> {
  const format = OUTPUT_FORMATS[contentType];
  const { maxPixels } = limits;
  const image = sharp(bytes, { failOn: "error", limitInputPixels: maxPixels });
  let declared: Metadata;
  try {
    declared = await image.metadata();
  } catch (error) {
    // sharp checks `limitInputPixels` against the header already.
    throw isPixelLimit(error) ? tooManyPixels(maxPixels) : invalid(contentType);
  }
  if (declared.format !== format) throw invalid(contentType);
  if ((declared.width ?? 0) * (declared.height ?? 0) > maxPixels) throw tooManyPixels(maxPixels);
  return limits.slots.run(async () => {
    try {
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
      if (isPixelLimit(error)) throw tooManyPixels(maxPixels);
      throw invalid(contentType);
    }
  });
}

function isPixelLimit(error: unknown): boolean {
  return error instanceof Error && /pixel limit/i.test(error.message);
}

function invalid(contentType: string) {
  return validationError("file", `is not a valid ${contentType} image`);
}

function tooManyPixels(maxPixels: number) {
  return validationError("file", `has more pixels than can be processed (at most ${maxPixels} pixels, width × height)`);
}
