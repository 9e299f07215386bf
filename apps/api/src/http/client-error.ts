import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { ulid } from "@parley/db";
import type { Logger } from "pino";
import { ApiError } from "./api-error.js";
import { errorBodyOf } from "./error-handler.js";
import { currentWindow } from "./rate-limit.js";
import { REQUEST_ID_HEADER } from "./request-id.js";

/**
 * What Node itself refuses before any route runs (a slow or endless request, oversized
 * headers, bytes that are not HTTP): answered like every other response, with a request id,
 * the rate-limit headers and the error body (decisions.md), instead of Node's bare status
 * line; then the connection is closed.
 */
export function answerClientError(rateLimitPerMinute: number, logger: Logger) {
  return (error: Error & { code?: string }, socket: Socket): void => {
    const apiError = apiErrorOf(error);
    // As Node's own handler: a response whose headers went out already cannot be replaced.
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
    if (!apiError || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    // A request that was being read already has its id (request-id.ts): the logs match.
    const existing = inFlight?.getHeader(REQUEST_ID_HEADER);
    const requestId = typeof existing === "string" ? existing : `req_${ulid()}`;
    const body = JSON.stringify(errorBodyOf(apiError, requestId));
    const reason = { 400: "Bad Request", 408: "Request Timeout", 431: "Request Header Fields Too Large" }[
      apiError.status
    ];
    socket.end(
      [
        `HTTP/1.1 ${apiError.status} ${reason ?? "Error"}`,
        "Content-Type: application/json; charset=utf-8",
        `Content-Length: ${Buffer.byteLength(body)}`,
        `${REQUEST_ID_HEADER}: ${requestId}`,
        `X-RateLimit-Limit: ${rateLimitPerMinute}`,
        `X-RateLimit-Remaining: ${rateLimitPerMinute}`,
        `X-RateLimit-Reset: ${currentWindow().resetSeconds}`,
        "Connection: close",
        "",
        body,
      ].join("\r\n"),
    );
    logger.info({ requestId, code: apiError.code, reason: error.code }, "request refused before routing");
  };
}

function apiErrorOf(error: Error & { code?: string }): ApiError | undefined {
  if (error.code === "ERR_HTTP_REQUEST_TIMEOUT") {
    return new ApiError("request_timeout", "The request did not arrive in time. Send it again, faster.");
  }
  if (error.code === "HPE_HEADER_OVERFLOW") {
    return new ApiError("headers_too_large", "The request's headers are too large (16 kB in all at most).");
  }
  if (error.code?.startsWith("HPE_")) {
    return new ApiError("malformed_request", "The request is not valid HTTP/1.1.");
  }
  return undefined;
}
