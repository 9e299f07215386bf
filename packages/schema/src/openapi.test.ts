import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { operations } from "./catalogue.js";
import { buildOpenApiDocument } from "./openapi.js";

type Document = {
  openapi: string;
  paths: Record<
    string,
    Record<string, { operationId: string; "x-parley-scope": string; responses: Record<string, unknown> }>
  >;
};

describe("the OpenAPI document", () => {
  const document = buildOpenApiDocument({ serverUrl: "https://api.example.com/v1" }) as Document;

  it("validates as OpenAPI 3.1", async () => {
    const validator = new Validator();
    const result = await validator.validate(document);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  it("describes every operation of the catalogue with its scope and errors", () => {
    for (const operation of operations) {
      const described = document.paths[operation.path]?.[operation.method];
      expect(described?.operationId, operation.id).toBe(operation.id);
      expect(described?.["x-parley-scope"]).toBe(operation.scope ?? "none");
      expect(Object.keys(described?.responses ?? {})).toContain(String(operation.status));
      expect(Object.keys(described?.responses ?? {})).toContain("401");
    }
  });

  it("has one operation id per route", () => {
    const ids = operations.map((operation) => operation.id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
