import type { Response } from "express";

/**
 * A JSON answer (an operation's or an error's), as express's `res.json` writes it (same
 * headers, same bytes) without its generic path: the charset and type negotiation, ETag
 * and freshness checks it runs for any body were a few percent of a page's CPU, and
 * ETags are off.
 */
export function writeJson(res: Response, status: number, body: unknown): void {
  // No body (a 204): express's own handling of it.
  if (body === undefined) {
    res.status(status).json(body);
    return;
  }
  if (body instanceof JsonBytes) writeJsonBytes(res, status, body.bytes);
  else writeJsonText(res, status, JSON.stringify(body));
}

/**
 * An answer already encoded as JSON (UTF-8), by a handler that had parts of it so (a page
 * of messages, see messages/message-texts.ts). `T` is what the bytes are the JSON of.
 */
export class JsonBytes<T> {
  /** Never set: only ties the bytes to the type they are the JSON of. */
  declare readonly of?: T;
  constructor(readonly bytes: Buffer) {}
}

/** A body as JSON text: a JsonBytes's own, or JSON.stringify's. */
export function jsonTextOf(body: unknown): string {
  return body instanceof JsonBytes ? body.bytes.toString("utf8") : JSON.stringify(body);
}

/**
 * writeJson's answer for a body already written as JSON text (an idempotent request's, see
 * runIdempotent). Encoded once: its length is the buffer's, where `Buffer.byteLength` and
 * then the socket's write each went through the whole text.
 */
export function writeJsonText(res: Response, status: number, text: string): void {
  writeJsonBytes(res, status, Buffer.from(text, "utf8"));
}

/** writeJson's answer for a body already encoded as JSON (UTF-8). */
function writeJsonBytes(res: Response, status: number, body: Buffer): void {
  res.statusCode = status;
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", body.length);
  res.end(body);
}
