import { MAX_UPLOAD_BYTES } from "@parley/schema";
import busboy from "busboy";
import type { Request } from "express";
import { ApiError, validationError } from "../http/api-error.js";
import { bodyTooLarge, declaredLength } from "../http/body-limit.js";

export interface ReceivedFile {
  filename: string;
  declaredType: string;
  bytes: Buffer;
}

/** Room for the multipart boundaries and headers around a file at the size limit. */
const MULTIPART_OVERHEAD = 64 * 1024;
const MAX_FILENAME_LENGTH = 255;

function tooLarge(): ApiError {
  return bodyTooLarge(`The file is larger than ${MAX_UPLOAD_BYTES} bytes (16 MB).`);
}

function malformed(): ApiError {
  const message = "the multipart/form-data body is malformed or incomplete";
  // The parser stopped reading the body: the connection is not kept for another request.
  return new ApiError("validation_error", `file: ${message}`, {
    param: "file",
    details: [{ param: "file", message }],
    headers: { Connection: "close" },
  });
}

/** At most 255 characters, cut between characters (never inside a surrogate pair). */
function storedName(filename: string): string {
  return Array.from(filename || "file")
    .slice(0, MAX_FILENAME_LENGTH)
    .join("");
}

/** The file of the field `file`, or why there is none; chunks are counted as they arrive. */
function collectFile(parser: busboy.Busboy) {
  let received: ReceivedFile | undefined;
  let exceeded = false;
  let filesInField = 0;
  parser.on("file", (field, stream, info) => {
    // A stream busboy destroys (a truncated body) emits `error`: handled by the parser's own.
    stream.on("error", () => {});
    if (field === "file") filesInField++;
    if (field !== "file" || filesInField > 1 || exceeded) {
      stream.resume();
      return;
    }
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("limit", () => {
      exceeded = true;
      chunks.length = 0;
    });
    stream.on("end", () => {
      if (exceeded) return;
      received = { filename: info.filename ?? "", declaredType: info.mimeType ?? "", bytes: Buffer.concat(chunks) };
    });
  });
  return (): ReceivedFile => {
    if (exceeded) throw tooLarge();
    // Which of two files would be meant is a guess: refused rather than one silently dropped.
    if (filesInField > 1) throw validationError("file", "holds more than one file: send one file per upload");
    if (!received) throw validationError("file", "is required: send the file in the field `file`");
    if (received.bytes.length === 0) throw validationError("file", "is empty");
    if (received.filename.includes("\u0000")) throw validationError("file", "the file name contains a NUL character");
    return { ...received, filename: storedName(received.filename) };
  };
}

/**
 * Streams a `multipart/form-data` body and keeps the field `file`. Chunks are counted as
 * they arrive: past 16 MB (16,777,216 bytes) the rest is drained unkept and the answer is
 * 413, so a large body is never held in memory whole.
 */
export function readUpload(req: Request): Promise<ReceivedFile> {
  if (!req.is("multipart/form-data")) {
    return Promise.reject(
      new ApiError("unsupported_media_type", "Send the file as multipart/form-data, in the field `file`."),
    );
  }
  if (declaredLength(req) > MAX_UPLOAD_BYTES + MULTIPART_OVERHEAD) {
    return Promise.reject(tooLarge());
  }
  let parser: busboy.Busboy;
  try {
    // busboy reports `limit` once a file reaches `fileSize` bytes: one more than allowed.
    parser = busboy({
      headers: req.headers,
      defParamCharset: "utf8",
      limits: { files: 5, fileSize: MAX_UPLOAD_BYTES + 1, fields: 20 },
    });
  } catch {
    return Promise.reject(
      new ApiError("unsupported_media_type", "The multipart/form-data body has no valid boundary."),
    );
  }
  // The connection already went away (its `close` came before this listener could): nothing will arrive.
  if (req.destroyed && !req.readableEnded) return Promise.reject(malformed());
  return new Promise((resolve, reject) => {
    const result = collectFile(parser);
    parser.on("error", () => {
      // A parser that fails stops reading: drain the rest, or the keep-alive connection
      // would wait for a body nobody reads and hang the client's next request.
      req.unpipe(parser);
      req.resume();
      reject(malformed());
    });
    parser.on("close", () => {
      try {
        resolve(result());
      } catch (error) {
        reject(error);
      }
    });
    // A client that goes away mid-upload: stop parsing and let go of what was received.
    req.on("close", () => {
      if (req.complete) return;
      reject(malformed());
      parser.destroy();
    });
    req.pipe(parser);
  });
}
