import { type ErrorCode, errorCatalogue } from "./errors.js";
import type { Operation } from "./operation.js";
import type { PublicRoute } from "./public-routes.js";

/**
 * What any request can be answered, whatever its route: Node's own refusals before any
 * route runs (bytes that are not HTTP, a request too slow, headers too large), the
 * unexpected, and the database briefly out of reach.
 */
export const everyRouteErrors: readonly ErrorCode[] = [
  "malformed_request",
  "request_timeout",
  "headers_too_large",
  "internal_error",
  "service_unavailable",
];

/**
 * What the API's machinery answers for an operation, from the properties the server acts
 * on (apps/api/src/http: auth.ts, route.ts, validation.ts, idempotency.ts, body-limit.ts):
 * - every operation is behind the key check and its organization's allowance: 401, 429;
 * - `scope`: 403 `insufficient_scope`; `testOnly`: 404 `route_not_found` for a live key;
 * - `params`: 404 for an id that matches nothing (`attachment_not_found` for a file's);
 * - `query`: 422 for a field that fails its schema, or is unknown;
 * - `body`: 400 `invalid_json`, 413 over 1 MB, 422;
 * - `requestContentType`: 415 for another type, 413 over its size, 422 for a body without
 *   what it needs;
 * - `idempotent`: 409 for a key reused with another request or still running, 422 for a
 *   malformed `Idempotency-Key`.
 */
export function machineryErrorsOf(operation: Operation): ErrorCode[] {
  const codes: ErrorCode[] = ["authentication_required", "invalid_api_key", "rate_limited"];
  if (operation.scope) codes.push("insufficient_scope");
  if (operation.testOnly) codes.push("route_not_found");
  if (operation.params) {
    codes.push("attachment_id" in operation.params.shape ? "attachment_not_found" : "resource_not_found");
  }
  if (operation.query) codes.push("validation_error");
  if (operation.body) codes.push("invalid_json", "payload_too_large", "validation_error");
  if (operation.requestContentType) codes.push("unsupported_media_type", "payload_too_large", "validation_error");
  if (operation.idempotent) codes.push("idempotency_key_reuse", "idempotency_in_progress", "validation_error");
  return codes;
}

/** Every error an operation can answer: its own (`errors`), the machinery's and every route's; by status. */
export function errorsOf(operation: Operation): ErrorCode[] {
  return byStatus([...operation.errors, ...machineryErrorsOf(operation), ...everyRouteErrors]);
}

/**
 * Every error a route without an API key can answer: its own, a body's (400 not JSON, 413
 * over its size: http/body-limit.ts) and every route's; by status.
 */
export function publicRouteErrorsOf(route: PublicRoute): ErrorCode[] {
  const body: ErrorCode[] = route.body ? ["invalid_json", "payload_too_large"] : [];
  return byStatus([...route.errors, ...body, ...everyRouteErrors]);
}

function byStatus(codes: ErrorCode[]): ErrorCode[] {
  return [...new Set(codes)].sort((a, b) => errorCatalogue[a].status - errorCatalogue[b].status);
}
