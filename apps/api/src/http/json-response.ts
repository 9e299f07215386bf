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
  writeJsonText(res, status, jsonTextOf(body));
}

/**
 * An answer already written as JSON text, by a handler that had parts of it as text (a
 * page of messages, see messages/message-texts.ts). `T` is what the text is the JSON of.
 */
export class JsonText<T> {
  /** Never set: only ties the text to the type it is the JSON of. */
  declare readonly of?: T;
  constructor(readonly text: string) {}
}

/** A body as JSON text: a JsonText's own, or JSON.stringify's. */
export function jsonTextOf(body: unknown): string {
  return body instanceof JsonText ? body.text : JSON.stringify(body);
}

/**
 * writeJson's answer for a body already written as JSON text (an idempotent request's, see
 * runIdempotent). Encoded once: its length is the buffer's, where `Buffer.byteLength` and
 * then the socket's write each went through the whole text.
 */
export function writeJsonText(res: Response, status: number, text: string): void {
  const body = Buffer.from(text, "utf8");
  res.statusCode = status;
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", body.length);
  res.end(body);
}
