import type { IncomingMessage } from "node:http";
import type { Request, RequestHandler } from "express";
import express from "express";
import { ApiError } from "./api-error.js";

/**
 * 413 before the body is read: the connection closes after the answer, the rest of the
 * body read and dropped within the bounds of lingering-close.ts (see the error handler).
 */
export function bodyTooLarge(message: string): ApiError {
  return new ApiError("payload_too_large", message, { headers: { Connection: "close" } });
}

/** The body's length as its `Content-Length` declares it; 0 without one (chunked). */
export function declaredLength(req: Request): number {
  const declared = Number(req.get("content-length") ?? 0);
  return Number.isFinite(declared) ? declared : 0;
}

/**
 * A body parser with its limit also checked against the declared `Content-Length`:
 * express's parsers read a body over their limit to its end before they refuse it,
 * however large it is; declared over the limit, it is refused before one byte is read.
 * A chunked body is counted as it arrives by the parser itself, as before.
 */
function refusingDeclaredOverLimit(
  parse: RequestHandler,
  limitBytes: number,
  parses: (req: Request) => boolean,
): RequestHandler {
  return (req, res, next) => {
    if (declaredLength(req) > limitBytes && parses(req)) {
      next(bodyTooLarge(`The request body is larger than ${limitBytes} bytes.`));
      return;
    }
    parse(req, res, next);
  };
}

/** `express.json` with a limit in bytes (see refusingDeclaredOverLimit). */
export function jsonBody(options: { limitBytes: number; strict?: boolean }): RequestHandler {
  const parse = express.json({ limit: options.limitBytes, strict: options.strict ?? true });
  return refusingDeclaredOverLimit(parse, options.limitBytes, (req) => Boolean(req.is("application/json")));
}

/** `express.raw` with a limit in bytes, for the bodies of `type` (see refusingDeclaredOverLimit). */
export function rawBody(options: {
  limitBytes: number;
  type: string | ((req: IncomingMessage) => boolean);
}): RequestHandler {
  const { type, limitBytes } = options;
  const parses = (req: Request) => (typeof type === "string" ? Boolean(req.is(type)) : type(req));
  const parse = express.raw({ limit: limitBytes, type });
  const readRaw: RequestHandler = (req, res, next) =>
    parse(req, res, (error?: unknown) => next(error === undefined ? undefined : rawBodyError(error)));
  return refusingDeclaredOverLimit(readRaw, limitBytes, parses);
}

/**
 * A raw body (a mail, a provider's webhook) that could not be read is no JSON fault: an
 * unknown `Content-Encoding` is 415, a body its encoding or length does not match (a
 * corrupt gzip) 400 `malformed_request`. Over its limit, it goes on to the error handler.
 */
function rawBodyError(error: unknown): unknown {
  if (typeof error !== "object" || error === null) return error;
  const type = "type" in error ? error.type : undefined;
  if (type === "entity.too.large") return error;
  if (type === "encoding.unsupported") {
    return new ApiError(
      "unsupported_media_type",
      "The request body's Content-Encoding is not supported: send it as it is.",
    );
  }
  if ("status" in error && error.status === 400) {
    return new ApiError(
      "malformed_request",
      "The request body could not be read: its Content-Encoding or length does not match it.",
    );
  }
  return error;
}
