import type { z } from "zod";
import type { ErrorCode } from "./errors.js";
import type { Scope } from "./scopes.js";

export type HttpMethod = "get" | "post" | "patch" | "delete";

/** One route of the API: everything the server, the OpenAPI document, the docs and the SDK need. */
export interface Operation {
  /** `<resource>.<verb>`, e.g. `contacts.create`; the SDK method and the route handler key. */
  id: string;
  method: HttpMethod;
  /** OpenAPI style, relative to `/v1`: `/contacts/{contact_id}`. */
  path: string;
  /** Group in the reference. */
  tag: string;
  summary: string;
  description?: string;
  /** The scope the key needs; null where any valid key may call (the key describing itself). */
  scope: Scope | null;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodObject;
  /** Name of the request body in the OpenAPI components. */
  bodyName?: string;
  response: z.ZodType;
  /** Name of the response in the OpenAPI components. */
  responseName: string;
  /** A body other than JSON, read by the handler itself (uploads). */
  requestContentType?: "multipart/form-data" | "message/rfc822";
  /** Bytes instead of JSON; the handler writes the response itself. */
  responseContentType?: "application/octet-stream";
  status: 200 | 201;
  /**
   * Errors of this operation's own rules (a resource in the wrong state, a name taken).
   * What the machinery answers follows from the properties here (scope, params, body,
   * idempotent...) and is never restated: route-errors.ts, errorsOf.
   */
  errors: readonly ErrorCode[];
  /** Honours `Idempotency-Key`. */
  idempotent?: boolean;
  /** Answers 200 instead of `status` when it returned an existing resource (find-or-create). */
  findOrCreate?: boolean;
  /** Only test keys see the route; live keys get 404 `route_not_found`. */
  testOnly?: boolean;
}

/** Keeps the literal types of an operation so handlers get typed params, query and body. */
export function defineOperation<const T extends Operation>(operation: T): T {
  return operation;
}

type Parsed<S> = S extends z.ZodType ? z.output<S> : Record<string, never>;

export interface OperationInput<T extends Operation> {
  params: Parsed<T["params"]>;
  query: Parsed<T["query"]>;
  body: Parsed<T["body"]>;
}

export type OperationResponse<T extends Operation> = z.output<T["response"]>;
/** What a client sends: the input side of the schemas. */
export type OperationRequest<T extends Operation> = {
  params: T["params"] extends z.ZodType ? z.input<T["params"]> : undefined;
  query: T["query"] extends z.ZodType ? z.input<T["query"]> : undefined;
  body: T["body"] extends z.ZodType ? z.input<T["body"]> : undefined;
};
