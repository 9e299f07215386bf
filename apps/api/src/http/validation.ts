import { normalizeId, type Operation, type OperationInput } from "@parley/schema";
import type { Request } from "express";
import type { z } from "zod";
import { ApiError, type ErrorDetail, notFound, validationError } from "./api-error.js";

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

/**
 * How deep a JSON body may nest (the body itself is level 1). Far beyond any real
 * metadata; serialising (JSON.stringify) and storing (jsonb) are recursive and give out,
 * as an unexpected error, a few thousand levels down.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Text PostgreSQL can store: no NUL character, well-formed Unicode (JSON allows a UTF-16
 * half without its other half; UTF-8 and PostgreSQL cannot hold it).
 */
export function isStorableText(text: string): boolean {
  return !text.includes("\u0000") && text.isWellFormed();
}

interface Unstorable {
  at: string[];
  message: string;
}

/** Where a JSON value holds a string or a key PostgreSQL cannot store, or nests too deep; never recursing past the limit. */
function unstorableTextAt(value: unknown, path: string[]): Unstorable | undefined {
  const text = "must be valid Unicode text without NUL characters";
  if (typeof value === "string") return isStorableText(value) ? undefined : { at: path, message: text };
  if (typeof value !== "object" || value === null) return undefined;
  if (path.length >= MAX_JSON_DEPTH) {
    return { at: path.slice(0, 1), message: `must not nest more than ${MAX_JSON_DEPTH} levels deep` };
  }
  for (const [name, item] of Object.entries(value)) {
    const at = [...path, name];
    if (!isStorableText(name)) return { at, message: text };
    const found = unstorableTextAt(item, at);
    if (found) return found;
  }
  return undefined;
}

/** 422 naming the field that holds text PostgreSQL cannot store, or that nests too deep. */
export function requireStorableText(value: unknown, where: string) {
  const found = unstorableTextAt(value, []);
  if (found) throw validationError(found.at.join(".") || where, found.message);
}

function bodyOf(req: Request): Record<string, unknown> {
  const hasBody = Number(req.get("content-length") ?? 0) > 0 || req.get("transfer-encoding") !== undefined;
  if (req.body === undefined) {
    if (hasBody && !req.is("application/json")) {
      throw new ApiError("invalid_json", "The request body must be JSON, sent with `Content-Type: application/json`.");
    }
    // A JSON body the parser never read: the connection ended first. Never run it as `{}`.
    if (hasBody) throw new ApiError("invalid_json", "The request body could not be read: the connection ended.");
    return {};
  }
  if (typeof req.body !== "object" || req.body === null || Array.isArray(req.body)) {
    throw new ApiError("invalid_json", "The request body must be a JSON object.");
  }
  requireStorableText(req.body, "body");
  return req.body as Record<string, unknown>;
}

function queryOf(req: Request): Record<string, unknown> {
  const query = { ...req.query };
  requireStorableText(query, "query");
  return query;
}

/** `contact_id` -> `contact`: the resource a path parameter names. */
function resourceOf(param: string): string {
  return param.replace(/_id$/, "");
}

/**
 * Path parameters are plain strings: no pattern check, only the id case normalised. One
 * that cannot even be stored as text matches no resource.
 */
function paramsOf(req: Request): Record<string, string> {
  const params: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.params)) {
    const text = String(value);
    if (!isStorableText(text)) {
      // The spec's code for any file that cannot be reached, even by a malformed id.
      if (name === "attachment_id") throw new ApiError("attachment_not_found", `No such attachment: '${text}'`);
      throw notFound(resourceOf(name), text);
    }
    params[name] = normalizeId(text);
  }
  return params;
}

export function parseInput<T extends Operation>(operation: T, req: Request): OperationInput<T> {
  const params = operation.params ? parseOrThrow(operation.params, paramsOf(req), "path") : {};
  const query = operation.query ? parseOrThrow(operation.query, queryOf(req), "query") : {};
  const body = operation.body ? parseOrThrow(operation.body, bodyOf(req), "body") : {};
  return { params, query, body } as OperationInput<T>;
}
