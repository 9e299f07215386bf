/** Every error the SDK throws; API errors carry the body of decisions.md. */
export class ParleyError extends Error {
  override name = "ParleyError";
  readonly status: number | undefined;
  readonly code: string | undefined;
  readonly param: string | undefined;
  readonly requestId: string | undefined;
  readonly details: { param: string; message: string }[] | undefined;

  constructor(
    message: string,
    fields: {
      status?: number;
      code?: string;
      param?: string;
      requestId?: string;
      details?: { param: string; message: string }[];
      cause?: unknown;
    } = {},
  ) {
    super(message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.status = fields.status;
    this.code = fields.code;
    this.param = fields.param;
    this.requestId = fields.requestId;
    this.details = fields.details;
  }
}

export class AuthenticationError extends ParleyError {
  override name = "AuthenticationError";
}
export class PermissionError extends ParleyError {
  override name = "PermissionError";
}
export class NotFoundError extends ParleyError {
  override name = "NotFoundError";
}
export class ValidationError extends ParleyError {
  override name = "ValidationError";
}
export class ConflictError extends ParleyError {
  override name = "ConflictError";
}
export class RateLimitError extends ParleyError {
  override name = "RateLimitError";
}
/** 5xx and anything else unexpected from the server. */
export class ApiError extends ParleyError {
  override name = "ApiError";
}
/** The request never got an answer: DNS, refused connection, reset. */
export class ConnectionError extends ParleyError {
  override name = "ConnectionError";
}
export class TimeoutError extends ConnectionError {
  override name = "TimeoutError";
}

interface ErrorBody {
  error?: {
    code?: string;
    message?: string;
    param?: string;
    request_id?: string;
    details?: { param: string; message: string }[];
  };
}

/** The subclass for an HTTP status, filled from the error body. */
export function errorFromResponse(status: number, body: unknown, requestId: string | undefined): ParleyError {
  const error = (body as ErrorBody | undefined)?.error ?? {};
  const fields = {
    status,
    ...(error.code !== undefined ? { code: error.code } : {}),
    ...(error.param !== undefined ? { param: error.param } : {}),
    ...(error.details !== undefined ? { details: error.details } : {}),
    ...((error.request_id ?? requestId) !== undefined ? { requestId: error.request_id ?? requestId } : {}),
  };
  const message = error.message ?? `Parley answered ${status}`;
  if (status === 401) return new AuthenticationError(message, fields);
  if (status === 403) return new PermissionError(message, fields);
  if (status === 404) return new NotFoundError(message, fields);
  if (status === 400 || status === 413 || status === 415 || status === 422) return new ValidationError(message, fields);
  if (status === 409) return new ConflictError(message, fields);
  if (status === 429) return new RateLimitError(message, fields);
  return new ApiError(message, fields);
}
