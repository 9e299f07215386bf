import { operations } from "@parley/schema";
import { describe, expect, it } from "vitest";
import { createApiKey } from "../src/organizations/api-keys.js";
import { as, call, createTestOrganization, useTestApi } from "./harness.js";

const api = useTestApi();

/** The spec's scope table for the routes that exist so far. */
const specScopes: Record<string, string> = {
  "GET /contacts": "contacts:read",
  "POST /contacts": "contacts:write",
  "GET /contacts/{contact_id}": "contacts:read",
  "PATCH /contacts/{contact_id}": "contacts:write",
  "DELETE /contacts/{contact_id}": "contacts:write",
  "GET /conversations": "conversations:read",
  "POST /conversations": "conversations:write",
  "GET /conversations/{conversation_id}": "conversations:read",
  "PATCH /conversations/{conversation_id}": "conversations:write",
  "POST /conversations/{conversation_id}/close": "conversations:write",
  "POST /conversations/{conversation_id}/reopen": "conversations:write",
  "POST /conversations/{conversation_id}/assign": "conversations:write",
  "POST /conversations/{conversation_id}/unassign": "conversations:write",
  "GET /conversations/{conversation_id}/notes": "notes:read",
  "POST /conversations/{conversation_id}/notes": "notes:write",
  "POST /conversations/{conversation_id}/tags": "tags:write",
  "DELETE /conversations/{conversation_id}/tags/{tag_id}": "tags:write",
  "GET /channels": "channels:read",
  "GET /channels/{channel_id}": "channels:read",
  "GET /users": "users:read",
  "GET /users/{user_id}": "users:read",
  "GET /teams": "teams:read",
  "POST /teams": "teams:write",
  "GET /teams/{team_id}": "teams:read",
  "GET /teams/{team_id}/users": "teams:read",
  "GET /tags": "tags:read",
  "POST /tags": "tags:write",
  "PATCH /tags/{tag_id}": "tags:write",
  "DELETE /tags/{tag_id}": "tags:write",
  "GET /custom-fields": "custom_fields:read",
  "POST /custom-fields": "custom_fields:write",
};

function concretePath(path: string): string {
  return path.replace(/\{(\w+)\}/g, "x_unknown");
}

describe("the routes of the catalogue", () => {
  it("carry the scopes of the spec's table", () => {
    for (const operation of operations) {
      const route = `${operation.method.toUpperCase()} ${operation.path}`;
      if (specScopes[route]) expect(operation.scope, route).toBe(specScopes[route]);
    }
    for (const route of Object.keys(specScopes)) {
      expect(
        operations.some((operation) => `${operation.method.toUpperCase()} ${operation.path}` === route),
        route,
      ).toBe(true);
    }
  });

  it("are all served, each refusing a key without its scope with 403 insufficient_scope naming the scope", async () => {
    const org = await createTestOrganization(api);
    const { key } = await createApiKey(api.context.db, { organizationId: org.id, environment: "test", scopes: [] });
    for (const operation of operations.filter((each) => each.scope !== null)) {
      const body = operation.method === "get" ? undefined : {};
      const response = await as(api, key)[operation.method](concretePath(operation.path), { body });
      expect(response.status, operation.id).toBe(403);
      expect(response.body.error.code).toBe("insufficient_scope");
      expect(response.body.error.message).toContain(operation.scope);
    }
  });
});

describe("the calling key", () => {
  it("describes itself with its organization, environment and scopes, never the key", async () => {
    const org = await createTestOrganization(api, "Whoami Inc");
    const { key } = await createApiKey(api.context.db, { organizationId: org.id, environment: "live", scopes: [] });
    const response = await as(api, key).get("/api-keys/current");
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      object: "api_key",
      environment: "live",
      scopes: [],
      redacted_key: `parley_live_****${key.slice(-4)}`,
      organization: { object: "organization", id: org.id, name: "Whoami Inc" },
    });
    expect(JSON.stringify(response.body)).not.toContain(key);
  });
});

describe("the reference", () => {
  it("serves the OpenAPI 3.1 document at /v1/openapi.json without a key, with this server's address", async () => {
    const response = await call(api, "GET", "/openapi.json");
    expect(response.status).toBe(200);
    expect(response.body.openapi).toBe("3.1.0");
    expect(response.body.servers[0].url).toBe(api.baseUrl);
    expect(Object.keys(response.body.paths)).toContain("/contacts/{contact_id}");
  });

  it("serves an interactive reference page at /docs that loads the document", async () => {
    const page = await fetch(api.baseUrl.replace(/\/v1$/, "/docs"));
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
    const html = await page.text();
    expect(html).toContain("/v1/openapi.json");
    const script = await fetch(api.baseUrl.replace(/\/v1$/, "/docs/assets/swagger-ui-bundle.js"));
    expect(script.status).toBe(200);
  });
});
