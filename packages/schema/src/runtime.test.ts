import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { api } from "./catalogue.js";
import { renderRouteTable } from "./route-table.js";
import { routes } from "./runtime.js";

describe("@parley/schema/runtime", () => {
  it("src/routes.generated.ts is what `pnpm run docs` generates from the catalogue", async () => {
    const committed = await readFile(new URL("./routes.generated.ts", import.meta.url), "utf8");
    expect(committed, "src/routes.generated.ts is stale: run pnpm run docs").toBe(renderRouteTable());
  });

  it("has every operation's id, method, path and idempotency", () => {
    for (const [group, operations] of Object.entries(api)) {
      for (const [name, operation] of Object.entries(operations)) {
        const route = (routes as Record<string, Record<string, unknown>>)[group]?.[name];
        expect(route).toEqual({
          id: operation.id,
          method: operation.method,
          path: operation.path,
          idempotent: operation.idempotent === true,
        });
      }
    }
  });

  it("imports nothing that loads zod", async () => {
    const files = [
      "./runtime.ts",
      "./routes.generated.ts",
      "./resources/event-types.ts",
      "./resources/upload-types.ts",
    ];
    for (const file of files) {
      const text = await readFile(new URL(file, import.meta.url), "utf8");
      const valueImports = [...text.matchAll(/^(?:import|export) (?!type )[^;]*from "([^"]+)"/gm)].map((m) => m[1]);
      for (const source of valueImports) {
        expect(["./routes.generated.js", "./resources/event-types.js", "./resources/upload-types.js"], file).toContain(
          source,
        );
      }
    }
  });
});
