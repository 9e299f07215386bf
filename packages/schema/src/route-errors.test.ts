import { describe, expect, it } from "vitest";
import { operations } from "./catalogue.js";
import { buildOpenApiDocument } from "./openapi.js";
import type { Operation } from "./operation.js";
import { publicRoutes } from "./public-routes.js";
import { everyRouteErrors, machineryErrorsOf } from "./route-errors.js";

type Responses = Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>;
const document = buildOpenApiDocument() as { paths: Record<string, Record<string, { responses: Responses }>> };

/**
 * What each layer of the API server answers, and the routes it stands in front of, as
 * apps/api/src builds them (app.ts, http/route.ts): written here as statuses, apart from
 * the catalogue's own derivation (route-errors.ts) that the document is rendered from.
 */
const layers: { layer: string; applies: (operation: Operation) => boolean; statuses: number[] }[] = [
  { layer: "Node's refusals before routing (400, 408, 431)", applies: () => true, statuses: [400, 408, 431] },
  { layer: "the key check and the allowance (http/auth.ts)", applies: () => true, statuses: [401, 429] },
  { layer: "the unexpected, the database out of reach", applies: () => true, statuses: [500, 503] },
  { layer: "the scope", applies: (operation) => operation.scope !== null, statuses: [403] },
  { layer: "a test-only route for a live key", applies: (operation) => operation.testOnly === true, statuses: [404] },
  { layer: "a path id that matches nothing", applies: (operation) => operation.params !== undefined, statuses: [404] },
  { layer: "the query's schema", applies: (operation) => operation.query !== undefined, statuses: [422] },
  {
    layer: "the JSON body: not JSON, over 1 MB, off its schema",
    applies: (operation) => operation.body !== undefined,
    statuses: [400, 413, 422],
  },
  {
    layer: "a multipart or raw body: another type, over its size, without what it needs",
    applies: (operation) => operation.requestContentType !== undefined,
    statuses: [413, 415, 422],
  },
  {
    layer: "Idempotency-Key: reused, still running, malformed",
    applies: (operation) => operation.idempotent === true,
    statuses: [409, 422],
  },
];

/** The declared statuses of a path and method that lack an error answer with the Error body. */
function missing(path: string, method: string, statuses: number[]): number[] {
  const responses = document.paths[path]?.[method]?.responses ?? {};
  return statuses.filter(
    (status) => responses[String(status)]?.content?.["application/json"]?.schema?.$ref !== "#/components/schemas/Error",
  );
}

describe("the statuses the OpenAPI document declares", () => {
  it("cover, on every operation of the route table, what each layer in front of it answers", () => {
    const gaps: string[] = [];
    for (const operation of operations) {
      for (const { layer, applies, statuses } of layers) {
        if (!applies(operation)) continue;
        const absent = missing(operation.path, operation.method, statuses);
        if (absent.length > 0) gaps.push(`${operation.id}: ${layer}: ${absent.join(", ")}`);
      }
    }
    expect(gaps).toEqual([]);
  });

  it("cover, on every route without an API key, a body's 400 and 413 and every route's answers", () => {
    const gaps: string[] = [];
    for (const route of publicRoutes) {
      const statuses = [400, 408, 431, 500, 503, ...(route.body ? [413] : [])];
      const absent = missing(route.path, route.method, statuses);
      if (absent.length > 0) gaps.push(`${route.id}: ${absent.join(", ")}`);
    }
    expect(gaps).toEqual([]);
  });

  it("come from the operation's properties: no operation restates in `errors` what they already give", () => {
    const restated = operations.flatMap((operation) => {
      const given = new Set([...machineryErrorsOf(operation), ...everyRouteErrors]);
      return operation.errors.filter((code) => given.has(code)).map((code) => `${operation.id}: ${code}`);
    });
    expect(restated).toEqual([]);
  });
});
