import sharp, { type Exif } from "sharp";
import type { ApiResponse, TestApi } from "./harness.js";

/** Images above this many bytes are scaled (docs/guides/uploads.md). */
export const RESIZE_ABOVE_BYTES = 409_600;
export const MAX_UPLOAD_BYTES = 16_777_216;

export type ImageFormat = "jpeg" | "png" | "webp";
export const IMAGE_TYPES: Record<ImageFormat, string> = {
  jpeg: "image/jpeg",
  png: "image/png",
  webp: "image/webp",
};

/** A camera's EXIF with a GPS position, written into the generated images. */
export const CAMERA_EXIF: Exif = {
  IFD0: { Make: "ParleyCam", Model: "Field 1", Copyright: "Private person" },
  IFD3: {
    GPSLatitudeRef: "N",
    GPSLatitude: "48/1 51/1 2400/100",
    GPSLongitudeRef: "E",
    GPSLongitude: "2/1 21/1 600/100",
  },
};

export interface ImageOptions {
  width: number;
  height: number;
  /** Random pixels (which compress badly) over this share of the picture, 0 to 1. */
  noise?: number;
  /** The EXIF orientation tag: 6 means "turn 90° clockwise to display". */
  orientation?: number;
  exif?: Exif | null;
  quality?: number;
}

/** A real image generated with sharp: flat colour, optional noise patch, EXIF with GPS by default. */
export async function makeImage(format: ImageFormat, options: ImageOptions): Promise<Buffer> {
  const { width, height, noise = 0, orientation, exif = CAMERA_EXIF, quality = 95 } = options;
  let image = sharp({ create: { width, height, channels: 3, background: "#3366cc" } });
  const patchWidth = Math.round(width * Math.sqrt(noise));
  const patchHeight = Math.round(height * Math.sqrt(noise));
  if (patchWidth > 0 && patchHeight > 0) {
    const noisy = { type: "gaussian" as const, mean: 128, sigma: 60 };
    const input = {
      create: { width: patchWidth, height: patchHeight, channels: 3 as const, background: "#000", noise: noisy },
    };
    image = sharp(
      await image
        .composite([{ input, left: 0, top: 0 }])
        .png()
        .toBuffer(),
    );
  }
  if (format === "jpeg") image = image.jpeg({ quality });
  else if (format === "webp") image = image.webp({ quality });
  else image = image.png();
  if (exif) image = image.withExif(exif);
  if (orientation !== undefined) image = image.withMetadata({ orientation });
  return image.toBuffer();
}

/** Whether an EXIF block (as sharp's `metadata().exif` gives it) points to a GPS directory. */
export function hasGpsDirectory(exif: Buffer): boolean {
  const littleEndian = exif.includes(Buffer.from("II*\0", "latin1"));
  return exif.includes(Buffer.from(littleEndian ? [0x25, 0x88] : [0x88, 0x25]));
}

/** A PNG padded with a text chunk to exactly `size` bytes (still a valid PNG). */
export function padPng(png: Buffer, size: number): Buffer {
  const iendAt = png.length - 12;
  const dataLength = size - png.length - 12;
  if (dataLength < 9) throw new Error(`cannot pad a ${png.length}-byte PNG to ${size} bytes`);
  const data = Buffer.concat([Buffer.from("Comment\0", "latin1"), Buffer.alloc(dataLength - 8, "x")]);
  return Buffer.concat([png.subarray(0, iendAt), pngChunk("tEXt", data), png.subarray(iendAt)]);
}

/** One PNG chunk: length, type, data and the CRC of type and data. */
export function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

function crc32(bytes: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

/** A real one-page PDF with a correct cross-reference table. */
export function makePdf(text = "Invoice 42"): Buffer {
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 144] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
    `<< /Length ${`BT /F1 18 Tf 20 60 Td (${text}) Tj ET`.length} >>\nstream\nBT /F1 18 Tf 20 60 Td (${text}) Tj ET\nendstream`,
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
  ];
  let body = "%PDF-1.4\n";
  const offsets: number[] = [];
  objects.forEach((object, index) => {
    offsets.push(body.length);
    body += `${index + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xrefAt = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) body += `${String(offset).padStart(10, "0")} 00000 n \n`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xrefAt}\n%%EOF\n`;
  return Buffer.from(body, "latin1");
}

export interface UploadFile {
  bytes: Uint8Array;
  /** The part's Content-Type; an empty string sends none (FormData then says octet-stream). */
  type: string;
  filename: string;
  /** The form field; `file` unless told. */
  field?: string;
}

async function responseOf(response: Response): Promise<ApiResponse> {
  const text = await response.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // Not JSON: keep the text.
  }
  return { status: response.status, headers: response.headers, body };
}

/** POST /uploads with a FormData body, as a browser or curl -F would send it. */
export async function upload(
  api: TestApi,
  key: string,
  file: UploadFile,
  headers: Record<string, string> = {},
): Promise<ApiResponse> {
  const form = new FormData();
  form.append(file.field ?? "file", new Blob([new Uint8Array(file.bytes)], { type: file.type }), file.filename);
  const response = await fetch(`${api.baseUrl}/uploads`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, ...headers },
    body: form,
  });
  return responseOf(response);
}

/** POST /uploads with any body and headers, for what FormData cannot express. */
export async function postUploadBody(
  api: TestApi,
  key: string,
  body: Uint8Array | string,
  headers: Record<string, string> = {},
): Promise<ApiResponse> {
  const response = await fetch(`${api.baseUrl}/uploads`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, ...headers },
    body: typeof body === "string" ? body : new Uint8Array(body),
  });
  return responseOf(response);
}

const BOUNDARY = "----parley-test-boundary-7MA4YWxkTrZu0gW";

/** A multipart body whose part carries exactly the given Content-Disposition parameters. */
export function multipartBody(disposition: string, type: string, bytes: Uint8Array) {
  const head = `--${BOUNDARY}\r\nContent-Disposition: form-data; ${disposition}\r\nContent-Type: ${type}\r\n\r\n`;
  return {
    body: Buffer.concat([Buffer.from(head, "utf8"), bytes, Buffer.from(`\r\n--${BOUNDARY}--\r\n`, "latin1")]),
    contentType: `multipart/form-data; boundary=${BOUNDARY}`,
  };
}

/** RFC 8187 percent-encoding: only attr-chars stay as they are. */
export function encodeExtended(value: string): string {
  return encodeURIComponent(value).replace(/['()*!]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** Uploads under any file name, sent as RFC 8187 `filename*` (quotes, newlines and all). */
export async function uploadNamed(api: TestApi, key: string, filename: string, type: string, bytes: Uint8Array) {
  const { body, contentType } = multipartBody(`name="file"; filename*=UTF-8''${encodeExtended(filename)}`, type, bytes);
  return postUploadBody(api, key, body, { "content-type": contentType });
}

export interface Download {
  status: number;
  headers: Headers;
  bytes: Buffer;
}

/** GET an absolute content URL with a key: the raw bytes. */
export async function download(key: string, url: string): Promise<Download> {
  const response = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

export function jsonOf(download: Download): any {
  return JSON.parse(download.bytes.toString("utf8"));
}
