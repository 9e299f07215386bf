import { uploadTypesByExtension } from "@parley/schema/runtime";
import { ParleyError } from "./errors.js";

/** What `uploads.create` takes: a path (Node), bytes, a Blob/File, or a stream of bytes. */
export type Uploadable =
  | string
  | Uint8Array
  | ArrayBuffer
  | Blob
  | ReadableStream<Uint8Array>
  | AsyncIterable<Uint8Array>;

export interface UploadOptions {
  filename?: string;
  contentType?: string;
}

function basename(path: string): string {
  return path.split(/[\\/]/).pop() ?? path;
}

/** The type from the file name's extension, as the server itself would resolve it. */
export function contentTypeFor(filename: string | undefined): string | undefined {
  const extension = filename?.includes(".") ? filename.split(".").pop()?.toLowerCase() : undefined;
  return extension ? uploadTypesByExtension[extension] : undefined;
}

async function collect(stream: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  const iterable: AsyncIterable<Uint8Array> =
    Symbol.asyncIterator in stream ? stream : streamIterable(stream as ReadableStream<Uint8Array>);
  for await (const chunk of iterable) chunks.push(chunk);
  return chunks;
}

async function* streamIterable(stream: ReadableStream<Uint8Array>): AsyncIterable<Uint8Array> {
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    yield value;
  }
}

/** Reads a file path into a Blob: set by the Node entry (`@parley/sdk/node`, what Node loads). */
let pathReader: ((path: string) => Promise<Blob>) | undefined;

/** Lets `uploads.create` take file paths; the Node entry calls it with `node:fs`. */
export function usePathReader(reader: (path: string) => Promise<Blob>): void {
  pathReader = reader;
}

async function readPath(path: string): Promise<Blob> {
  if (!pathReader) {
    throw new ParleyError(
      "Uploading from a file path needs Node.js (@parley/sdk/node, loaded by default on Node, Deno and Bun); pass a Blob, bytes or a stream here",
    );
  }
  return pathReader(path);
}

/** The multipart body of an upload, with the file name and type inferred where possible. */
export async function uploadForm(file: Uploadable, options: UploadOptions = {}): Promise<FormData> {
  let blob: Blob;
  let filename = options.filename;
  if (typeof file === "string") {
    blob = await readPath(file);
    filename ??= basename(file);
  } else if (file instanceof Blob) {
    blob = file;
    filename ??= "name" in file && typeof file.name === "string" ? file.name : undefined;
  } else if (file instanceof Uint8Array || file instanceof ArrayBuffer) {
    blob = new Blob([file as Uint8Array<ArrayBuffer>]);
  } else {
    blob = new Blob((await collect(file)) as Uint8Array<ArrayBuffer>[]);
  }
  filename ??= "file";
  const type = options.contentType ?? (blob.type || contentTypeFor(filename) || "application/octet-stream");
  const form = new FormData();
  form.append("file", new Blob([blob], { type }), filename);
  return form;
}
