import { MAX_UPLOAD_BYTES } from "@parley/schema";
import busboy from "busboy";
import type { Request } from "express";
import { ApiError, validationError } from "../http/api-error.js";

export interface ReceivedFile {
  filename: string;
  declaredType: string;
  bytes: Buffer;
}

/** Room for the multipart boundaries and headers around a file at the size limit. */
const MULTIPART_OVERHEAD = 64 * 1024;
const MAX_FILENAME_LENGTH = 255;

function tooLarge(): ApiError {
  return new ApiError("payload_too_large", `The file is larger than ${MAX_UPLOAD_BYTES} bytes (16 MB).`, {
    headers: { Connection: "close" },
  });
}

/**
 * Streams a `multipart/form-data` body and keeps the field `file`. Chunks are counted as
 * they arrive: past 16 MB the rest is drained unkept and the answer is 413, so a large
 * body is never held in memory whole.
 */
export function readUpload(req: Request): Promise<ReceivedFile> {
  if (!req.is("multipart/form-data")) {
    return Promise.reject(
      new ApiError("unsupported_media_type", "Send the file as multipart/form-data, in the field `file`."),
    );
  }
  if (Number(req.get("content-length") ?? 0) > MAX_UPLOAD_BYTES + MULTIPART_OVERHEAD) {
    return Promise.reject(tooLarge());
  }
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        defParamCharset: "utf8",
        limits: { files: 1, fileSize: MAX_UPLOAD_BYTES, fields: 20 },
      });
    } catch {
      reject(new ApiError("unsupported_media_type", "The multipart/form-data body has no valid boundary."));
      return;
    }
    let received: ReceivedFile | undefined;
    let exceeded = false;
    parser.on("file", (field, stream, info) => {
      if (field !== "file" || received) {
        stream.resume();
        return;
      }
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("limit", () => {
        exceeded = true;
        chunks.length = 0;
        stream.resume();
      });
      stream.on("end", () => {
        if (exceeded) return;
        received = {
          filename: (info.filename || "file").slice(0, MAX_FILENAME_LENGTH),
          declaredType: info.mimeType ?? "",
          bytes: Buffer.concat(chunks),
        };
      });
    });
    parser.on("error", () => reject(validationError("file", "the multipart/form-data body is malformed")));
    parser.on("close", () => {
      if (exceeded) return reject(tooLarge());
      if (!received) return reject(validationError("file", "is required: send the file in the field `file`"));
      if (received.bytes.length === 0) return reject(validationError("file", "is empty"));
      resolve(received);
    });
    req.pipe(parser);
  });
}
