import { isLostConnection } from "@parley/db";
import type { ErrorBody } from "@parley/schema";
import type { ErrorRequestHandler, RequestHandler } from "express";
import { ApiError } from "./api-error.js";
import { writeJson } from "./json-response.js";
import { locateJsonSyntaxError } from "./json-syntax.js";
import { answerClosesConnection, lingerBeforeClose } from "./lingering-close.js";

/** A parse failure says where the JSON breaks, so the sender can find the fault. */
function invalidJson(error: object): ApiError {
  const body = "body" in error && typeof error.body === "string" ? error.body : undefined;
  const fault = body === undefined ? undefined : locateJsonSyntaxError(body);
  if (!fault) return new ApiError("invalid_json", "The request body is not valid JSON.");
  return new ApiError(
    "invalid_json",
    `The request body is not valid JSON: ${fault.reason} at line ${fault.line}, column ${fault.column}.`,
  );
}

/** Express's own body-parser errors carry a `type`; map the ones a client causes. */
function fromBodyParser(error: object): ApiError | undefined {
  const type = "type" in error ? error.type : undefined;
  switch (type) {
    case "entity.parse.failed":
      return invalidJson(error);
    case "entity.too.large":
      return new ApiError(
        "payload_too_large",
        "limit" in error && typeof error.limit === "number"
          ? `The request body is larger than ${error.limit} bytes.`
          : "The request body is too large.",
      );
    case "encoding.unsupported":
    case "charset.unsupported":
      return new ApiError("invalid_json", "The request body must be UTF-8 JSON.");
    default:
      // A body that could not be read at all (corrupt compression, wrong length): not JSON either.
      return "status" in error && error.status === 400
        ? new ApiError("invalid_json", "The request body could not be read as JSON.")
        : undefined;
  }
}

/** The routes whose unknown ids are `attachment_not_found` (the spec's code for any unreachable file). */
const ATTACHMENT_PATH = /^\/v1\/attachments\/[^/]*\/content\/?$|^\/files\//i;

/**
 * The router could not percent-decode a path parameter. Path ids are plain strings, and
 * one that is not even valid text matches no resource.
 */
function fromPathDecoding(error: object, path: string): ApiError | undefined {
  if (!(error instanceof URIError) || !("status" in error) || error.status !== 400) return undefined;
  if (ATTACHMENT_PATH.test(path)) {
    return new ApiError("attachment_not_found", "No such attachment: the path holds an id that is not valid UTF-8.");
  }
  return new ApiError("resource_not_found", "No such resource: the path holds an id that is not valid UTF-8.");
}

/**
 * The database went away (a restart, a failover): the transaction never committed, so
 * nothing was done, and a retry shortly after will work. 503 with `Retry-After`, never 500.
 */
function fromLostDatabase(error: object): ApiError | undefined {
  if (!isLostConnection(error)) return undefined;
  return new ApiError("service_unavailable", "The database is briefly unavailable; nothing was done. Retry shortly.", {
    headers: { "Retry-After": "2" },
  });
}

function clientErrorOf(error: unknown, path: string): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (typeof error !== "object" || error === null) return undefined;
  return fromPathDecoding(error, path) ?? fromBodyParser(error) ?? fromLostDatabase(error);
}

export function errorBodyOf(error: ApiError, requestId: string): ErrorBody {
  return {
    error: {
      code: error.code,
      message: error.message,
      ...(error.param !== undefined ? { param: error.param } : {}),
      request_id: requestId,
      ...(error.details !== undefined ? { details: error.details } : {}),
    },
  };
}

export const errorHandler: ErrorRequestHandler = (error, req, res, _next) => {
  let apiError = clientErrorOf(error, req.path);
  if (apiError?.code === "service_unavailable")
    req.log.warn({ reason: (error as Error).message }, "database unavailable");
  if (!apiError) {
    req.log.error({ err: error }, "unhandled error");
    apiError = new ApiError("internal_error", "An unexpected error occurred. Quote the request id to support.");
  }
  for (const [name, value] of Object.entries(apiError.headers)) res.setHeader(name, value);
  // Refused before its body was all read (too large, unparsable): the rest is read for a
  // bounded while after the answer, so the client reads the answer and no reset.
  if (answerClosesConnection(res)) lingerBeforeClose(req, res);
  writeJson(res, apiError.status, errorBodyOf(apiError, req.requestId));
};

export const routeNotFound: RequestHandler = (req, _res, next) => {
  next(new ApiError("route_not_found", `No route ${req.method} ${req.path}`));
};
