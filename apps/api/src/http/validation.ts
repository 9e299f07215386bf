import { normalizeId, type Operation, type OperationInput } from "@parley/schema";
import type { Request } from "express";
import type { z } from "zod";
import { ApiError, type ErrorDetail } from "./api-error.js";

function detailsOf(error: z.ZodError, prefix = ""): ErrorDetail[] {
  return error.issues.flatMap((issue) => {
    const path = [prefix, ...issue.path.map(String)].filter(Boolean).join(".");
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => ({ param: path ? `${path}.${key}` : key, message: "is not a known field" }));
    }
    return [{ param: path || prefix || "body", message: issue.message }];
  });
}

function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const details = detailsOf(result.error);
  const first = details[0] ?? { param: where, message: "is invalid" };
  const summary = details.map((detail) => `${detail.param}: ${detail.message}`).join("; ");
  throw new ApiError("validation_error", `Invalid ${where}: ${summary}`, { param: first.param, details });
}

function bodyOf(req: Request): Record<string, unknown> {
  const hasBody = Number(req.get("content-length") ?? 0) > 0 || req.get("transfer-encoding") !== undefined;
  if (req.body === undefined) {
    if (hasBody && !req.is("application/json")) {
      throw new ApiError("invalid_json", "The request body must be JSON, sent with `Content-Type: application/json`.");
    }
    return {};
  }
  if (typeof req.body !== "object" || req.body === null || Array.isArray(req.body)) {
    throw new ApiError("invalid_json", "The request body must be a JSON object.");
  }
  return req.body as Record<string, unknown>;
}

/** Path parameters are plain strings: no pattern check, only the id case normalised. */
function paramsOf(req: Request): Record<string, string> {
  const params: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.params)) params[name] = normalizeId(String(value));
  return params;
}

export function parseInput<T extends Operation>(operation: T, req: Request): OperationInput<T> {
  const params = operation.params ? parseOrThrow(operation.params, paramsOf(req), "path") : {};
  const query = operation.query ? parseOrThrow(operation.query, { ...req.query }, "query") : {};
  const body = operation.body ? parseOrThrow(operation.body, bodyOf(req), "body") : {};
  return { params, query, body } as OperationInput<T>;
}
