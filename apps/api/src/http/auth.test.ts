import { createHash } from "node:crypto";
import type { AddressInfo } from "node:net";
import { apiKeys } from "@parley/db";
import { defineOperation, type Scope } from "@parley/schema";
import { eq } from "drizzle-orm";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  type ApiResponse,
  as,
  call,
  createTestOrganization,
  eventually,
  expectError,
  type TestOrganization,
  useTestApi,
} from "../../test/harness.js";
import { createApiKey, generateApiKey, revokeApiKey } from "../organizations/api-keys.js";
import { authenticate } from "./auth.js";
import { errorHandler } from "./error-handler.js";
import { requestId } from "./request-id.js";
import { bindOperation } from "./route.js";

const api = useTestApi();

async function keyWithScopes(org: TestOrganization, scopes: Scope[], environment: "live" | "test" = "test") {
  const created = await createApiKey(api.context.db, { organizationId: org.id, environment, scopes });
  return created.key;
}

/** The id a key was stored under, found by its hash (what the service itself does). */
async function keyIdOf(key: string): Promise<string> {
  const hash = createHash("sha256").update(key).digest("hex");
  const [row] = await api.context.db.select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.secretHash, hash));
  if (!row) throw new Error("key not stored");
  return row.id;
}

describe("missing credentials: 401 authentication_required", () => {
  it("answers a request without an Authorization header", async () => {
    expectError(await call(api, "GET", "/contacts"), 401, "authentication_required");
    expectError(await call(api, "POST", "/contacts", { body: { name: "Ada" } }), 401, "authentication_required");
  });

  it("answers a Bearer header that carries no key", async () => {
    for (const authorization of ["Bearer", "Bearer ", "Bearer    "]) {
      const response = await call(api, "GET", "/contacts", { headers: { authorization } });
      expectError(response, 401, "authentication_required");
    }
  });

  it("answers schemes other than Bearer, even with a valid key", async () => {
    const org = await createTestOrganization(api);
    const basic = `Basic ${Buffer.from(`${org.test}:`).toString("base64")}`;
    for (const authorization of [basic, `Token ${org.test}`, org.test, `Bearer:${org.test}`]) {
      const response = await call(api, "GET", "/contacts", { headers: { authorization } });
      expectError(response, 401, "authentication_required");
    }
  });

  it("accepts the Bearer scheme in any letter case", async () => {
    const org = await createTestOrganization(api);
    const response = await call(api, "GET", "/contacts", { headers: { authorization: `bearer ${org.test}` } });
    expect(response.status).toBe(200);
  });
});

describe("bad keys: 401 invalid_api_key", () => {
  it("refuses malformed keys", async () => {
    const org = await createTestOrganization(api);
    const secret = org.live.slice("parley_live_".length);
    const malformed = [
      "not-a-key",
      "parley_live_",
      "parley_live_tooShort123",
      `parley_prod_${secret}`,
      `sk_live_${secret}`,
      `parley_live_${secret.slice(0, 20)}-!${secret.slice(22)}`,
      `${org.live} extra`,
    ];
    for (const key of malformed) {
      const response = await call(api, "GET", "/contacts", { headers: { authorization: `Bearer ${key}` } });
      expectError(response, 401, "invalid_api_key");
    }
  });

  it("refuses a well-formed key that was never issued", async () => {
    for (const key of [generateApiKey("live"), generateApiKey("test")]) {
      expectError(await call(api, "GET", "/contacts", { key }), 401, "invalid_api_key");
    }
  });

  it("refuses a revoked key and only that key", async () => {
    const org = await createTestOrganization(api);
    const extra = await createApiKey(api.context.db, { organizationId: org.id, environment: "live" });
    expect((await as(api, extra.key).get("/contacts")).status).toBe(200);

    expect(await revokeApiKey(api.context.db, org.id, extra.id)).toBe(true);

    // Every process hears of the revocation within a second (key-cache.test.ts).
    await eventually(
      async () => (await as(api, extra.key).get("/contacts")).status,
      (status) => status === 401,
      1_000,
    );
    expectError(await as(api, extra.key).get("/contacts"), 401, "invalid_api_key");
    expectError(await as(api, extra.key).post("/contacts", { body: { name: "Ada" } }), 401, "invalid_api_key");
    expect((await as(api, org.live).get("/contacts")).status).toBe(200);
    expect((await as(api, org.test).get("/contacts")).status).toBe(200);
  });

  it("refuses a key whose environment prefix was changed", async () => {
    const org = await createTestOrganization(api);
    const relabelled = [
      org.live.replace(/^parley_live_/, "parley_test_"),
      org.test.replace(/^parley_test_/, "parley_live_"),
    ];
    for (const key of relabelled) {
      expect(key).not.toBe(org.live);
      expect(key).not.toBe(org.test);
      expectError(await as(api, key).get("/contacts"), 401, "invalid_api_key");
    }
  });
});

describe("environment from the key prefix", () => {
  it("keeps test data invisible to the live key", async () => {
    const org = await createTestOrganization(api);
    const created = await as(api, org.test).post("/contacts", { body: { name: "Sandbox Sam" } });
    expect(created.status).toBe(201);
    const live = as(api, org.live);

    expectError(await live.get(`/contacts/${created.body.id}`), 404, "resource_not_found");
    expectError(await live.patch(`/contacts/${created.body.id}`, { body: { name: "x" } }), 404, "resource_not_found");
    expectError(await live.delete(`/contacts/${created.body.id}`), 404, "resource_not_found");
    expect((await live.get("/contacts")).body.data).toEqual([]);
    expect((await as(api, org.test).get(`/contacts/${created.body.id}`)).status).toBe(200);
  });

  it("keeps live data invisible to the test key", async () => {
    const org = await createTestOrganization(api);
    const created = await as(api, org.live).post("/contacts", { body: { name: "Real Rita" } });
    expect(created.status).toBe(201);
    const test = as(api, org.test);

    expectError(await test.get(`/contacts/${created.body.id}`), 404, "resource_not_found");
    expect((await test.get("/contacts")).body.data).toEqual([]);
    const liveList = await as(api, org.live).get("/contacts");
    expect(liveList.body.data.map((contact: { id: string }) => contact.id)).toEqual([created.body.id]);
  });

  it("gives a key created for an environment that environment's data", async () => {
    const org = await createTestOrganization(api);
    const created = await as(api, org.live).post("/contacts", { body: { name: "Real Rita" } });
    const anotherLiveKey = await keyWithScopes(org, ["contacts:read"], "live");
    expect((await as(api, anotherLiveKey).get(`/contacts/${created.body.id}`)).status).toBe(200);
  });
});

describe("scopes: 403 insufficient_scope naming the scope", () => {
  it("lets a contacts:read key read but not write", async () => {
    const org = await createTestOrganization(api);
    const existing = await as(api, org.test).post("/contacts", { body: { name: "Ada" } });
    const reader = as(api, await keyWithScopes(org, ["contacts:read"]));

    expect((await reader.get("/contacts")).status).toBe(200);
    expect((await reader.get(`/contacts/${existing.body.id}`)).status).toBe(200);

    const writes = [
      await reader.post("/contacts", { body: { name: "Eve" } }),
      await reader.patch(`/contacts/${existing.body.id}`, { body: { name: "Eve" } }),
      await reader.delete(`/contacts/${existing.body.id}`),
    ];
    for (const response of writes) {
      expectError(response, 403, "insufficient_scope");
      expect(response.body.error.message).toContain("contacts:write");
    }
    const after = await as(api, org.test).get(`/contacts/${existing.body.id}`);
    expect(after.body.name).toBe("Ada");
    expect((await as(api, org.test).get("/contacts")).body.data).toHaveLength(1);
  });

  it("refuses a read endpoint to a key without its read scope", async () => {
    const org = await createTestOrganization(api);
    const writer = as(api, await keyWithScopes(org, ["contacts:write", "tags:write"]));

    const contacts = await writer.get("/contacts");
    expectError(contacts, 403, "insufficient_scope");
    expect(contacts.body.error.message).toContain("contacts:read");

    const tags = await writer.get("/tags");
    expectError(tags, 403, "insufficient_scope");
    expect(tags.body.error.message).toContain("tags:read");

    expect((await writer.post("/contacts", { body: { name: "Ada" } })).status).toBe(201);
  });

  it("refuses a write endpoint to a key holding other scopes", async () => {
    const org = await createTestOrganization(api);
    const client = as(api, await keyWithScopes(org, ["contacts:read", "contacts:write", "custom_fields:read"]));

    const tag = await client.post("/tags", { body: { name: "vip" } });
    expectError(tag, 403, "insufficient_scope");
    expect(tag.body.error.message).toContain("tags:write");

    const field = await client.post("/custom-fields", { body: { name: "Plan" } });
    expectError(field, 403, "insufficient_scope");
    expect(field.body.error.message).toContain("custom_fields:write");
    expect((await as(api, org.test).get("/tags")).body.data).toEqual([]);
  });

  it("checks the scope before the body", async () => {
    const org = await createTestOrganization(api);
    const reader = as(api, await keyWithScopes(org, ["contacts:read"]));
    expectError(await reader.post("/contacts", { body: { name: 42, unknown: true } }), 403, "insufficient_scope");
  });

  it("gives a key with no scopes nothing", async () => {
    const org = await createTestOrganization(api);
    const nothing = as(api, await keyWithScopes(org, []));
    expectError(await nothing.get("/contacts"), 403, "insufficient_scope");
    expectError(await nothing.get("/custom-fields"), 403, "insufficient_scope");
  });
});

describe("keys at rest", () => {
  it("stores only the SHA-256 of a key, never the key or its secret", async () => {
    const org = await createTestOrganization(api);
    const limited = await createApiKey(api.context.db, {
      organizationId: org.id,
      environment: "live",
      scopes: ["contacts:read"],
    });
    const keys = [org.live, org.test, limited.key];
    const { sql } = api.client;

    const rows = await sql<{ id: string; secret_hash: string; row: string }[]>`
      select id, secret_hash, api_keys::text as row from api_keys where organization_id = ${org.id}`;
    expect(rows).toHaveLength(3);
    const hashes = keys.map((key) => createHash("sha256").update(key).digest("hex"));
    expect(rows.map((row) => row.secret_hash).sort()).toEqual([...hashes].sort());
    for (const key of keys) {
      const secret = key.replace(/^parley_(live|test)_/, "");
      for (const row of rows) {
        expect(row.row).not.toContain(key);
        expect(row.row).not.toContain(secret);
      }
    }
    expect(await keyIdOf(limited.key)).toBe(limited.id);
  });

  it("leaves the key in no table of the database", async () => {
    const org = await createTestOrganization(api);
    const { sql } = api.client;
    const tables = await sql<{ name: string }[]>`
      select quote_ident(table_schema) || '.' || quote_ident(table_name) as name
      from information_schema.tables
      where table_schema not in ('pg_catalog', 'information_schema') and table_type = 'BASE TABLE'`;
    expect(tables.map((table) => table.name)).toContain("public.api_keys");
    for (const key of [org.live, org.test]) {
      const secret = key.replace(/^parley_(live|test)_/, "");
      for (const table of tables) {
        const [found] = await sql<{ count: number }[]>`
          select count(*)::int as count from ${sql.unsafe(table.name)} t where t::text like ${`%${secret}%`}`;
        expect({ table: table.name, count: found?.count }).toEqual({ table: table.name, count: 0 });
      }
    }
  });
});

describe("test-only routes", () => {
  const ping = defineOperation({
    id: "testHelpers.ping",
    method: "post",
    path: "/test-helpers/ping",
    tag: "Test helpers",
    summary: "Ping",
    scope: "messages:write",
    response: z.object({ ok: z.literal(true) }),
    responseName: "Ping",
    status: 200,
    errors: [],
    testOnly: true,
  });
  let baseUrl = "";
  let close: () => Promise<void> = async () => {};

  beforeAll(async () => {
    const router = express.Router();
    router.use(
      authenticate(
        api.context.db,
        api.context.apiKeyCache,
        api.context.rateLimitCounter,
        api.context.rateLimitPerMinute,
      ),
    );
    bindOperation(router, api.context, ping, async () => ({ body: { ok: true as const } }));
    const app = express();
    app.use(requestId);
    app.use("/v1", router);
    app.use(errorHandler);
    const server = app.listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    close = () => new Promise((resolve) => server.close(() => resolve()));
  });
  afterAll(() => close());

  async function post(key: string): Promise<ApiResponse> {
    const response = await fetch(`${baseUrl}/test-helpers/ping`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
    });
    return { status: response.status, headers: response.headers, body: await response.json() };
  }

  it("are 404 route_not_found for a live key, whatever its scopes", async () => {
    const org = await createTestOrganization(api);
    expectError(await post(org.live), 404, "route_not_found");
    expectError(await post(await keyWithScopes(org, ["contacts:read"], "live")), 404, "route_not_found");
  });

  it("check the scope of a test key", async () => {
    const org = await createTestOrganization(api);
    expect((await post(org.test)).status).toBe(200);
    const response = await post(await keyWithScopes(org, ["contacts:read"], "test"));
    expectError(response, 403, "insufficient_scope");
    expect(response.body.error.message).toContain("messages:write");
  });
});
