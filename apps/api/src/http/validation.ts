import { normalizeId, type Operation, type OperationInput } from "@parley/schema";
import type { Request } from "express";
import type { z } from "zod";
import { ApiError, type ErrorDetail, notFound, validationError } from "./api-error.js";

/** The schemas found by following `path` through objects, arrays, records and wrappers; none past a dead end. */
function schemaAt(schema: z.core.$ZodType, path: readonly PropertyKey[]): z.core.$ZodType[] {
  const def = schema._zod.def as unknown as Record<string, unknown> & { type: string };
  const inner = (next: unknown) => (next ? schemaAt(next as z.core.$ZodType, path) : []);
  switch (def.type) {
    case "optional":
    case "nullable":
    case "default":
    case "prefault":
    case "readonly":
    case "catch":
    case "nonoptional":
      return inner(def.innerType);
    case "pipe":
      return inner(def.in);
    case "lazy":
      return typeof def.getter === "function" ? inner(def.getter()) : [];
    case "union":
      return Array.isArray(def.options) ? def.options.flatMap((option) => inner(option)) : [];
    default:
      break;
  }
  if (path.length === 0) return [schema];
  const [head, ...rest] = path;
  const step = (next: unknown) => (next ? schemaAt(next as z.core.$ZodType, rest) : []);
  if (def.type === "object" && typeof head === "string") {
    return step((def.shape as Record<string, unknown> | undefined)?.[head]);
  }
  if (def.type === "array") return step(def.element);
  if (def.type === "record") return step(def.valueType);
  return [];
}

/** The field names the object at `path` accepts. */
function knownKeysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  return schemaAt(schema, path).flatMap((found) => {
    const def = found._zod.def as unknown as { type: string; shape?: Record<string, unknown> };
    return def.type === "object" && def.shape ? Object.keys(def.shape) : [];
  });
}

/** Optimal-string-alignment distance: edits, with a swap of two neighbours counting as one. */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number) => rows[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, at(i - 2, j - 2) + 1);
      const row = rows[i];
      if (row) row[j] = best;
    }
  }
  return at(a.length, b.length);
}

/** The known field an unknown one most likely meant: one or two edits away (two from 6 characters on). */
export function closestKey(unknown: string, known: readonly string[]): string | undefined {
  const limit = unknown.length >= 6 ? 2 : 1;
  let best: { key: string; distance: number } | undefined;
  for (const key of known) {
    const distance = Math.min(editDistance(unknown, key), editDistance(unknown.toLowerCase(), key));
    if (distance <= limit && (!best || distance < best.distance)) best = { key, distance };
  }
  return best?.key;
}

/** Stripe's wording: `Received unknown parameter: nmae. Did you mean name?` */
function unknownParameterMessage(param: string, suggestion: string | undefined): string {
  return `Received unknown parameter: ${param}.${suggestion ? ` Did you mean ${suggestion}?` : ""}`;
}

interface Detail extends ErrorDetail {
  /** The message says everything by itself (names the parameter). */
  standalone?: boolean;
}

function detailsOf(schema: z.ZodType, error: z.ZodError, prefix = ""): Detail[] {
  return error.issues.flatMap((issue): Detail[] => {
    const path = [prefix, ...issue.path.map(String)].filter(Boolean).join(".");
    if (issue.code === "unrecognized_keys") {
      const known = knownKeysAt(schema, issue.path);
      return issue.keys.map((key) => {
        const param = path ? `${path}.${key}` : key;
        const suggestion = closestKey(key, known);
        const message = unknownParameterMessage(param, suggestion && (path ? `${path}.${suggestion}` : suggestion));
        return { param, message, standalone: true };
      });
    }
    return [{ param: path || prefix || "body", message: issue.message }];
  });
}

/** The value as the schema outputs it, or 422 `validation_error` naming every fault (`where`: body, query, path). */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const found = detailsOf(schema, result.error);
  const details = found.map(({ param, message }) => ({ param, message }));
  const first = details[0] ?? { param: where, message: "is invalid" };
  const summary = found
    .map((detail) => (detail.standalone ? detail.message : `${detail.param}: ${detail.message}`))
    .join("; ");
  const only = found.length === 1 ? found[0] : undefined;
  const message = only?.standalone ? only.message : `Invalid ${where}: ${summary}`;
  throw new ApiError("validation_error", message, { param: first.param, details });
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
