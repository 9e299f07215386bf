import { describe, expect, it } from "vitest";
import { as, createTestOrganization, eventually, useTestApi } from "../../test/harness.js";
import { createApiKey, revokeApiKey } from "../organizations/api-keys.js";

const statements: string[] = [];
const api = useTestApi({}, { ownDatabase: true, onQuery: (query) => statements.push(query) });

const keyReads = () => statements.filter((query) => /from api_keys/.test(query)).length;

async function listening() {
  const cache = api.context.apiKeyCache;
  if (!cache) throw new Error("no key cache");
  await eventually(
    async () => cache.listening,
    (value) => value,
    5_000,
  );
  return cache;
}

describe("the API key cache", () => {
  it("authenticates a known key without a statement", async () => {
    await listening();
    const org = await createTestOrganization(api);
    const client = as(api, org.test);
    expect((await client.get("/nothing")).status).toBe(404);
    const before = keyReads();
    for (let i = 0; i < 20; i++) expect((await client.get("/nothing")).status).toBe(404);
    expect(keyReads() - before).toBe(0);
  });

  it("reads an unknown key every time: it is never held", async () => {
    await listening();
    const org = await createTestOrganization(api);
    const stranger = as(api, `${org.test.slice(0, -4)}0000`);
    const before = keyReads();
    for (let i = 0; i < 3; i++) expect((await stranger.get("/nothing")).status).toBe(401);
    expect(keyReads() - before).toBe(3);
  });

  it("drops a revoked key within a second: the revocation is announced as it commits", async () => {
    await listening();
    const org = await createTestOrganization(api);
    const extra = await createApiKey(api.context.db, { organizationId: org.id, environment: "test" });
    expect((await as(api, extra.key).get("/contacts")).status).toBe(200);
    expect((await as(api, extra.key).get("/contacts")).status).toBe(200);

    const revoked = Date.now();
    expect(await revokeApiKey(api.context.db, org.id, extra.id)).toBe(true);
    await eventually(
      async () => (await as(api, extra.key).get("/contacts")).status,
      (status) => status === 401,
      1_000,
    );
    expect(Date.now() - revoked).toBeLessThan(1_000);
    expect((await as(api, org.test).get("/contacts")).status).toBe(200);
  });

  it("is emptied when its listening connection drops, and fills again once it listens anew", async () => {
    const cache = await listening();
    const org = await createTestOrganization(api);
    const client = as(api, org.test);
    expect((await client.get("/nothing")).status).toBe(404);
    expect(cache.size).toBeGreaterThan(0);

    // The database ends the connection (a restart, a failover, a proxy that cut it).
    const [terminated] = await api.client.sql<{ count: number }[]>`
      select count(pg_terminate_backend(pid))::int as count from pg_stat_activity
      where application_name = 'parley-key-revocations' and datname = current_database()`;
    expect(terminated?.count).toBe(1);
    await eventually(
      async () => cache.size,
      (size) => size === 0,
      5_000,
    );
    await listening();
    const before = keyReads();
    expect((await client.get("/nothing")).status).toBe(404);
    expect(keyReads() - before).toBe(1);
    expect((await client.get("/nothing")).status).toBe(404);
    expect(keyReads() - before).toBe(1);
  });
});
