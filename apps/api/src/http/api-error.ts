import { type ErrorCode, errorCatalogue } from "@parley/schema";

export interface ErrorDetail {
  param: string;
  message: string;
}

/** The only way to refuse a request: a code of the catalogue, mapped once to the error body. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly param: string | undefined;
  readonly details: ErrorDetail[] | undefined;
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    options: { param?: string; details?: ErrorDetail[]; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.status = errorCatalogue[code].status;
    this.param = options.param;
    this.details = options.details;
    this.headers = options.headers ?? {};
  }
}

export function notFound(resource: string, id: string): ApiError {
  return new ApiError("resource_not_found", `No such ${resource}: '${id}'`);
}

export function validationError(param: string, message: string): ApiError {
  return new ApiError("validation_error", `${param}: ${message}`, { param, details: [{ param, message }] });
}
