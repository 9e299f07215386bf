import { z } from "zod";

/** Every error code the API returns, with its HTTP status. `ApiError` takes only these. */
export const errorCatalogue = {
  invalid_json: { status: 400, description: "The body is not valid JSON, or not a JSON object." },
  malformed_request: {
    status: 400,
    description: "The request is not valid HTTP (answered before any route; the connection is closed).",
  },
  authentication_required: { status: 401, description: "No `Authorization: Bearer` header." },
  invalid_api_key: { status: 401, description: "The API key is unknown, revoked or malformed." },
  invalid_signature: {
    status: 401,
    description: "A provider webhook's signature (`X-Hub-Signature-256`) does not match any connected app secret.",
  },
  insufficient_scope: { status: 403, description: "The API key lacks the scope the endpoint needs." },
  invalid_provider_signature: {
    status: 403,
    description:
      "An SMS provider's webhook (Twilio's `X-Twilio-Signature`, Vonage's `Authorization` token) carries no signature, or one that does not verify with the credentials of the channel it names; nothing was stored.",
  },
  permission_denied: {
    status: 403,
    description:
      "The API key has the scope but may not act on this resource: only a note's author key changes or deletes it.",
  },
  invalid_verify_token: {
    status: 403,
    description: "A provider webhook handshake named no connected channel's verify token.",
  },
  resource_not_found: {
    status: 404,
    description: "No such resource, or one of another organization or environment.",
  },
  route_not_found: { status: 404, description: "No such route." },
  attachment_not_found: {
    status: 404,
    description: "Unknown, expired or foreign attachment.",
  },
  method_not_allowed: { status: 405, description: "The path exists, but not with this method." },
  request_timeout: {
    status: 408,
    description:
      "The request's headers or body did not arrive in time (`HTTP_HEADERS_TIMEOUT_MS`, `HTTP_REQUEST_TIMEOUT_MS`); the connection is closed.",
  },
  invalid_state: { status: 409, description: "The action is not allowed in the resource's current state." },
  resource_already_exists: {
    status: 409,
    description: "A unique field (an `external_id`, a tag name, a custom-field key) is already taken.",
  },
  idempotency_key_reuse: { status: 409, description: "The Idempotency-Key was used with a different request." },
  idempotency_in_progress: {
    status: 409,
    description: "A request with the same Idempotency-Key is still running; retry shortly.",
  },
  payload_too_large: { status: 413, description: "The body or file is above the size limit." },
  unsupported_media_type: {
    status: 415,
    description: "The upload's type is not accepted, or the body is not multipart.",
  },
  validation_error: { status: 422, description: "A body or query field fails its schema; see `details`." },
  invalid_cursor: { status: 422, description: "The `after` cursor was not issued by this list." },
  unsupported_message_type: {
    status: 422,
    description: "The channel cannot carry the type, or the type is `template`.",
  },
  attachment_type_mismatch: { status: 422, description: "The message `type` differs from the attached file's kind." },
  headers_too_large: {
    status: 431,
    description: "The request's headers are above 16 kB in all; the connection is closed.",
  },
  rate_limited: { status: 429, description: "Too many requests; see `Retry-After`." },
  internal_error: { status: 500, description: "Something unexpected went wrong on our side." },
  service_unavailable: {
    status: 503,
    description:
      "The database is briefly unreachable (a restart, a failover); nothing was done. Retry after `Retry-After`.",
  },
} as const satisfies Record<string, { status: number; description: string }>;

export type ErrorCode = keyof typeof errorCatalogue;
export const errorCodes = Object.keys(errorCatalogue) as ErrorCode[];

export const errorBody = z
  .object({
    error: z.object({
      code: z.enum(errorCodes as [ErrorCode, ...ErrorCode[]]),
      message: z.string(),
      param: z.string().optional(),
      request_id: z.string(),
      details: z.array(z.object({ param: z.string(), message: z.string() })).optional(),
    }),
  })
  .meta({ id: "Error" });
export type ErrorBody = z.infer<typeof errorBody>;
