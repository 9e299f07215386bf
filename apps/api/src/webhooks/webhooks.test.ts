import type { Scope } from "@parley/schema";
import { describe, expect, it } from "vitest";
import { as, createTestOrganization, expectError, type TestApi, useTestApi, walkList } from "../../test/harness.js";
import { createApiKey } from "../organizations/api-keys.js";

/** The endpoints API, on the run's shared database, with no worker: nothing is delivered here. */
const api = useTestApi();
/** The same app in production mode: URLs must reach public addresses. */
const production = useTestApi({ NODE_ENV: "production", PARLEY_SECRETS_KEY: "0".repeat(64) });

type Client = ReturnType<typeof as>;

const WEBHOOK_ID = /^wh_[0-9A-HJKMNP-TV-Z]{26}$/;
const DELIVERY_ID = /^whd_[0-9A-HJKMNP-TV-Z]{26}$/;
const EVENT_ID = /^evt_[0-9A-HJKMNP-TV-Z]{26}$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const FULL_SECRET = /^whsec_[0-9A-Za-z]{32,}$/;
const MASKED_SECRET = /^whsec_\*\*\*\*[0-9A-Za-z]{4}$/;
const UNKNOWN_WEBHOOK = "wh_01ARZ3NDEKTSV4RRFFQ69G5FAV";
const RECEIVER = "https://receiver.example.com/parley";
/** Nothing listens on port 1: an attempt there fails at once, without a receiver. */
const NOBODY = "http://127.0.0.1:1/hooks";
/** A public address written as a literal: production accepts it without asking DNS. */
const PUBLIC_LITERAL = "https://93.184.215.14/hooks";

async function setup(app: TestApi = api) {
  const org = await createTestOrganization(app);
  return { org, client: as(app, org.test), live: as(app, org.live) };
}

async function createEndpoint(client: Client, body: Record<string, unknown> = {}) {
  const response = await client.post("/webhooks", { body: { url: RECEIVER, events: ["contact.created"], ...body } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

function masked(secret: string) {
  return `whsec_****${secret.slice(-4)}`;
}

async function endpointRow(id: string) {
  const [row] = await api.client.sql<
    { failure_count: number; first_failure_at: Date | null; disabled_reason: string | null; enabled: boolean }[]
  >`select failure_count, first_failure_at, disabled_reason, enabled from webhook_endpoints where id = ${id}`;
  return row;
}

async function deliveryRows(endpointId: string) {
  const [row] = await api.client.sql<{ count: number }[]>`
    select count(*)::int as count from webhook_deliveries where endpoint_id = ${endpointId}`;
  return row?.count ?? 0;
}

async function restrictedKey(organizationId: string, scopes: Scope[]) {
  const key = await createApiKey(api.context.db, { organizationId, environment: "test", scopes });
  return as(api, key.key);
}

describe("POST /webhooks", () => {
  it("creates an endpoint with 201 and answers the full signing secret this once", async () => {
    const { client } = await setup();

    const response = await client.post("/webhooks", {
      body: { url: RECEIVER, description: "CRM sync", events: ["message.received", "message.failed"] },
    });

    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      object: "webhook_endpoint",
      id: expect.stringMatching(WEBHOOK_ID),
      url: RECEIVER,
      description: "CRM sync",
      events: ["message.received", "message.failed"],
      environment: "test",
      enabled: true,
      disabled_reason: null,
      secret: expect.stringMatching(FULL_SECRET),
      failure_count: 0,
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: expect.stringMatching(TIMESTAMP),
    });
  });

  it("gives every endpoint its own secret", async () => {
    const { client } = await setup();

    const first = await createEndpoint(client);
    const second = await createEndpoint(client);

    expect(first.secret).not.toBe(second.secret);
  });

  it("masks the secret afterwards in GET, the list and PATCH", async () => {
    const { client } = await setup();
    const created = await createEndpoint(client);
    const expected = { ...created, secret: masked(created.secret) };

    const fetched = await client.get(`/webhooks/${created.id}`);
    const listed = await client.get("/webhooks");
    const patched = await client.patch(`/webhooks/${created.id}`, { body: { description: "renamed" } });

    expect(fetched.body).toEqual(expected);
    expect(fetched.body.secret).toMatch(MASKED_SECRET);
    expect(listed.body.data).toEqual([expected]);
    expect(patched.body.secret).toBe(masked(created.secret));
    expect(JSON.stringify([fetched.body, listed.body, patched.body])).not.toContain(created.secret);
  });

  it("stores the key's environment and ignores an environment in the body", async () => {
    const { client, live } = await setup();

    const fromTest = await createEndpoint(client, { environment: "live" });
    const fromLive = await createEndpoint(live, { environment: "test" });

    expect(fromTest.environment).toBe("test");
    expect(fromLive.environment).toBe("live");
  });

  it("accepts `*` for every event type, and drops repeated names", async () => {
    const { client } = await setup();

    expect((await createEndpoint(client, { events: ["*"] })).events).toEqual(["*"]);
    expect((await createEndpoint(client, { events: ["contact.created", "contact.created"] })).events).toEqual([
      "contact.created",
    ]);
  });

  it("can create a disabled endpoint", async () => {
    const { client } = await setup();

    expect((await createEndpoint(client, { enabled: false })).enabled).toBe(false);
  });

  it.each([
    ["an ftp: URL", "ftp://files.example.com/hooks"],
    ["a relative URL", "/hooks"],
    ["a URL without a scheme", "receiver.example.com/hooks"],
    ["a javascript: URL", "javascript:alert(1)"],
    ["a URL of 2049 characters", `https://example.com/${"a".repeat(2049 - 20)}`],
  ])("refuses %s with 422 on url", async (_, url) => {
    const { client } = await setup();

    expectError(await client.post("/webhooks", { body: { url, events: ["*"] } }), 422, "validation_error", "url");
    expect(await walkList(client, "/webhooks")).toEqual([]);
  });

  it("refuses a missing url with 422 on url", async () => {
    const { client } = await setup();

    expectError(await client.post("/webhooks", { body: { events: ["*"] } }), 422, "validation_error", "url");
  });

  it.each([
    ["an unknown event type", ["contact.created", "contact.exploded"]],
    ["an event type in the wrong case", ["Contact.Created"]],
    ["an empty list", []],
    ["a missing list", undefined],
  ])("refuses %s with 422 on events", async (_, events) => {
    const { client } = await setup();

    const response = await client.post("/webhooks", { body: { url: RECEIVER, events } });

    expectError(response, 422, "validation_error");
    expect(response.body.error.param).toMatch(/^events(\.\d+)?$/);
    expect(await walkList(client, "/webhooks")).toEqual([]);
  });

  it("accepts every type of the catalogue", async () => {
    const { client } = await setup();
    const catalogue = [
      "message.received",
      "message.sent",
      "message.delivered",
      "message.read",
      "message.failed",
      "conversation.created",
      "conversation.updated",
      "conversation.assigned",
      "conversation.closed",
      "conversation.reopened",
      "contact.created",
      "contact.updated",
      "tag.added",
      "tag.removed",
    ];

    expect((await createEndpoint(client, { events: catalogue })).events).toEqual(catalogue);
  });
});

describe("environments", () => {
  it("a test key's endpoint does not exist for the live key", async () => {
    const { client, live } = await setup();
    const testEndpoint = await createEndpoint(client);
    const liveEndpoint = await createEndpoint(live);

    expectError(await live.get(`/webhooks/${testEndpoint.id}`), 404, "resource_not_found");
    expectError(
      await live.patch(`/webhooks/${testEndpoint.id}`, { body: { enabled: false } }),
      404,
      "resource_not_found",
    );
    expectError(await live.delete(`/webhooks/${testEndpoint.id}`), 404, "resource_not_found");
    expectError(await live.post(`/webhooks/${testEndpoint.id}/rotate-secret`), 404, "resource_not_found");
    expectError(await live.get(`/webhooks/${testEndpoint.id}/deliveries`), 404, "resource_not_found");
    expect((await walkList(live, "/webhooks")).map((item) => item.id)).toEqual([liveEndpoint.id]);
    expect((await walkList(client, "/webhooks")).map((item) => item.id)).toEqual([testEndpoint.id]);
    expect((await client.get(`/webhooks/${testEndpoint.id}`)).body.enabled).toBe(true);
  });

  it("another organization's endpoint does not exist", async () => {
    const { client } = await setup();
    const other = await setup();
    const endpoint = await createEndpoint(client);

    expectError(await other.client.get(`/webhooks/${endpoint.id}`), 404, "resource_not_found");
    expect(await walkList(other.client, "/webhooks")).toEqual([]);
  });
});

describe("GET /webhooks", () => {
  it("lists newest first and pages with a cursor", async () => {
    const { client } = await setup();
    const first = await createEndpoint(client);
    const second = await createEndpoint(client);
    const third = await createEndpoint(client);

    const page = await client.get("/webhooks", { query: { limit: 2 } });

    expect(page.body.data.map((item: { id: string }) => item.id)).toEqual([third.id, second.id]);
    expect(page.body.pagination).toEqual({ has_more: true, next_cursor: expect.any(String) });
    expect((await walkList(client, "/webhooks", { limit: 1 })).map((item) => item.id)).toEqual([
      third.id,
      second.id,
      first.id,
    ]);
  });

  it("answers 404 for an unknown endpoint", async () => {
    const { client } = await setup();

    expectError(await client.get(`/webhooks/${UNKNOWN_WEBHOOK}`), 404, "resource_not_found");
  });
});

describe("PATCH /webhooks/{id}", () => {
  it("changes url, description, events and enabled, and nothing else", async () => {
    const { client } = await setup();
    const created = await createEndpoint(client, { description: "before" });

    const response = await client.patch(`/webhooks/${created.id}`, {
      body: {
        url: "http://other.example.com:8080/in",
        description: "after",
        events: ["tag.added", "*"],
        enabled: false,
      },
    });

    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body).toEqual({
      ...created,
      secret: masked(created.secret),
      url: "http://other.example.com:8080/in",
      description: "after",
      events: ["tag.added", "*"],
      enabled: false,
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect((await client.get(`/webhooks/${created.id}`)).body).toEqual(response.body);
  });

  it("leaves absent fields alone and clears the description with null", async () => {
    const { client } = await setup();
    const created = await createEndpoint(client, { description: "keep me?" });

    const response = await client.patch(`/webhooks/${created.id}`, { body: { description: null } });

    expect(response.body).toMatchObject({
      url: RECEIVER,
      events: ["contact.created"],
      enabled: true,
      description: null,
    });
  });

  it("re-enabling clears the failure counter and the disabled reason", async () => {
    const { client } = await setup();
    const created = await createEndpoint(client);
    await api.client.sql`
      update webhook_endpoints set enabled = false, failure_count = 25, first_failure_at = now() - interval '2 days',
        disabled_reason = 'Disabled after 25 consecutive failed events over at least 24 hours'
      where id = ${created.id}`;
    expect((await client.get(`/webhooks/${created.id}`)).body).toMatchObject({
      enabled: false,
      failure_count: 25,
      disabled_reason: expect.any(String),
    });

    const response = await client.patch(`/webhooks/${created.id}`, { body: { enabled: true } });

    expect(response.body).toMatchObject({ enabled: true, failure_count: 0, disabled_reason: null });
    expect(await endpointRow(created.id)).toEqual({
      enabled: true,
      failure_count: 0,
      first_failure_at: null,
      disabled_reason: null,
    });
  });

  it.each([
    ["an ftp: URL", { url: "ftp://files.example.com/hooks" }, "url"],
    ["an unknown event type", { events: ["contact.exploded"] }, "events"],
    ["an empty events list", { events: [] }, "events"],
    ["a field that is not known", { secret: "whsec_mine" }, "secret"],
  ])("refuses %s with 422 and changes nothing", async (_, body, param) => {
    const { client } = await setup();
    const created = await createEndpoint(client);

    const response = await client.patch(`/webhooks/${created.id}`, { body });

    expectError(response, 422, "validation_error");
    expect(response.body.error.param.split(".")[0]).toBe(param);
    expect((await client.get(`/webhooks/${created.id}`)).body).toEqual({ ...created, secret: masked(created.secret) });
  });

  it("answers 404 for an unknown endpoint", async () => {
    const { client } = await setup();

    expectError(
      await client.patch(`/webhooks/${UNKNOWN_WEBHOOK}`, { body: { enabled: true } }),
      404,
      "resource_not_found",
    );
  });
});

describe("DELETE /webhooks/{id}", () => {
  it("answers Deleted and removes the endpoint with its delivery history", async () => {
    const { client } = await setup();
    const created = await createEndpoint(client, { url: NOBODY });
    const kept = await createEndpoint(client, { url: NOBODY });
    for (const endpoint of [created, kept]) {
      expect((await client.post(`/webhooks/${endpoint.id}/test`)).status).toBe(200);
    }
    expect(await deliveryRows(created.id)).toBe(1);

    const response = await client.delete(`/webhooks/${created.id}`);

    expect(response.status).toBe(200);
    expect(response.body).toEqual({ object: "webhook_endpoint", id: created.id, deleted: true });
    expectError(await client.get(`/webhooks/${created.id}`), 404, "resource_not_found");
    expectError(await client.get(`/webhooks/${created.id}/deliveries`), 404, "resource_not_found");
    expectError(await client.delete(`/webhooks/${created.id}`), 404, "resource_not_found");
    expect(await deliveryRows(created.id)).toBe(0);
    expect(await deliveryRows(kept.id)).toBe(1);
    expect((await walkList(client, "/webhooks")).map((item) => item.id)).toEqual([kept.id]);
  });
});

describe("POST /webhooks/{id}/rotate-secret", () => {
  it("answers a new full secret; later reads mask the new one", async () => {
    const { client } = await setup();
    const created = await createEndpoint(client);

    const rotated = await client.post(`/webhooks/${created.id}/rotate-secret`);

    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({
      ...created,
      secret: expect.stringMatching(FULL_SECRET),
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect(rotated.body.secret).not.toBe(created.secret);
    expect((await client.get(`/webhooks/${created.id}`)).body.secret).toBe(masked(rotated.body.secret));
  });

  it("keeps the old secret for 24 hours", async () => {
    const { client } = await setup();
    const created = await createEndpoint(client);

    await client.post(`/webhooks/${created.id}/rotate-secret`);

    const [row] = await api.client.sql<{ previous_secret: string; hours: number }[]>`
      select previous_secret, extract(epoch from previous_secret_expires_at - now()) / 3600 as hours
      from webhook_endpoints where id = ${created.id}`;
    expect(row?.previous_secret).toBe(created.secret);
    expect(Number(row?.hours)).toBeGreaterThan(23.9);
    expect(Number(row?.hours)).toBeLessThanOrEqual(24);
  });
});

describe("deliveries by hand, without a receiver", () => {
  it("POST /webhooks/{id}/test records a failed attempt when nobody listens, and does not schedule another", async () => {
    const { client } = await setup();
    const endpoint = await createEndpoint(client, { url: NOBODY });

    const response = await client.post(`/webhooks/${endpoint.id}/test`);

    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      object: "webhook_delivery",
      id: expect.stringMatching(DELIVERY_ID),
      endpoint_id: endpoint.id,
      event_id: expect.stringMatching(EVENT_ID),
      event_type: "webhook.test",
      attempt: 1,
      status: "failed",
      response_status: null,
      duration_ms: expect.any(Number),
      response_body: null,
      error: expect.stringMatching(/ECONNREFUSED/),
      next_retry_at: null,
      created_at: expect.stringMatching(TIMESTAMP),
    });
    expect((await client.get(`/webhooks/${endpoint.id}/deliveries`)).body.data).toEqual([response.body]);
    expect((await client.get(`/events/${response.body.event_id}`)).body).toMatchObject({
      type: "webhook.test",
      data: { webhook_endpoint: { object: "webhook_endpoint", id: endpoint.id } },
    });
  });

  it("lists attempts newest first, paginated; a retry by hand is the next attempt of the same event", async () => {
    const { client } = await setup();
    const endpoint = await createEndpoint(client, { url: NOBODY });
    const first = (await client.post(`/webhooks/${endpoint.id}/test`)).body;

    const retried = await client.post(`/webhooks/${endpoint.id}/deliveries/${first.id}/retry`);
    const again = await client.post(`/webhooks/${endpoint.id}/deliveries/${retried.body.id}/retry`);

    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ event_id: first.event_id, attempt: 2, status: "failed" });
    expect(retried.body.id).not.toBe(first.id);
    expect(again.body).toMatchObject({ event_id: first.event_id, attempt: 3 });
    const page = await client.get(`/webhooks/${endpoint.id}/deliveries`, { query: { limit: 2 } });
    expect(page.body.data).toEqual([again.body, retried.body]);
    expect(page.body.pagination.has_more).toBe(true);
    expect(await walkList(client, `/webhooks/${endpoint.id}/deliveries`, { limit: 1 })).toEqual([
      again.body,
      retried.body,
      first,
    ]);
  });

  it("a retry by hand of a delivery of another endpoint is 404", async () => {
    const { client } = await setup();
    const endpoint = await createEndpoint(client, { url: NOBODY });
    const other = await createEndpoint(client, { url: NOBODY });
    const delivery = (await client.post(`/webhooks/${endpoint.id}/test`)).body;

    expectError(await client.post(`/webhooks/${other.id}/deliveries/${delivery.id}/retry`), 404, "resource_not_found");
    expect(await deliveryRows(other.id)).toBe(0);
  });
});

describe("scopes", () => {
  it("webhooks:read lists and reads, but cannot write", async () => {
    const { org, client } = await setup();
    const endpoint = await createEndpoint(client, { url: NOBODY });
    const reader = await restrictedKey(org.id, ["webhooks:read"]);

    expect((await reader.get("/webhooks")).status).toBe(200);
    expect((await reader.get(`/webhooks/${endpoint.id}`)).status).toBe(200);
    expect((await reader.get(`/webhooks/${endpoint.id}/deliveries`)).status).toBe(200);
    expect((await reader.get("/events")).status).toBe(200);
    expectError(await reader.post("/webhooks", { body: { url: RECEIVER, events: ["*"] } }), 403, "insufficient_scope");
    expectError(
      await reader.patch(`/webhooks/${endpoint.id}`, { body: { enabled: false } }),
      403,
      "insufficient_scope",
    );
    expectError(await reader.delete(`/webhooks/${endpoint.id}`), 403, "insufficient_scope");
    expectError(await reader.post(`/webhooks/${endpoint.id}/rotate-secret`), 403, "insufficient_scope");
    expectError(await reader.post(`/webhooks/${endpoint.id}/test`), 403, "insufficient_scope");
    expect((await client.get(`/webhooks/${endpoint.id}`)).body).toEqual({
      ...endpoint,
      secret: masked(endpoint.secret),
    });
    expect(await deliveryRows(endpoint.id)).toBe(0);
  });

  it("webhooks:write creates, but cannot read", async () => {
    const { org } = await setup();
    const writer = await restrictedKey(org.id, ["webhooks:write"]);

    const created = await writer.post("/webhooks", { body: { url: RECEIVER, events: ["*"] } });

    expect(created.status).toBe(201);
    expectError(await writer.get("/webhooks"), 403, "insufficient_scope");
    expectError(await writer.get(`/webhooks/${created.body.id}`), 403, "insufficient_scope");
    expectError(await writer.get("/events"), 403, "insufficient_scope");
  });

  it("a key without webhook scopes can do nothing with endpoints", async () => {
    const { org } = await setup();
    const other = await restrictedKey(org.id, ["contacts:read", "contacts:write"]);

    expectError(await other.get("/webhooks"), 403, "insufficient_scope");
    expectError(await other.post("/webhooks", { body: { url: RECEIVER, events: ["*"] } }), 403, "insufficient_scope");
  });
});

describe("production mode (NODE_ENV=production)", () => {
  const refused = [
    ["loopback", "http://127.0.0.1:8080/hooks"],
    ["localhost", "http://localhost/hooks"],
    ["a private 10.x address", "https://10.1.2.3/hooks"],
    ["a private 192.168.x address", "http://192.168.0.10/hooks"],
    ["a private 172.16.x address", "http://172.16.5.4/hooks"],
    ["the cloud metadata address", "http://169.254.169.254/latest/meta-data/"],
    ["IPv6 loopback", "http://[::1]:8080/hooks"],
    ["loopback as an IPv4-mapped IPv6 address", "http://[::ffff:127.0.0.1]/hooks"],
    ["the unspecified address", "http://0.0.0.0/hooks"],
  ];

  it.each(refused)("refuses %s at creation with 422 on url", async (_, url) => {
    const { client } = await setup(production);

    expectError(await client.post("/webhooks", { body: { url, events: ["*"] } }), 422, "validation_error", "url");
    expect(await walkList(client, "/webhooks")).toEqual([]);
  });

  it.each(refused)("refuses %s on PATCH with 422 on url, and keeps the old URL", async (_, url) => {
    const { client } = await setup(production);
    const created = await createEndpoint(client, { url: PUBLIC_LITERAL });

    expectError(await client.patch(`/webhooks/${created.id}`, { body: { url } }), 422, "validation_error", "url");
    expect((await client.get(`/webhooks/${created.id}`)).body.url).toBe(PUBLIC_LITERAL);
  });

  it("accepts a public address", async () => {
    const { client } = await setup(production);

    expect((await createEndpoint(client, { url: PUBLIC_LITERAL })).url).toBe(PUBLIC_LITERAL);
  });

  it("development mode accepts local receivers", async () => {
    const { client } = await setup();

    for (const url of ["http://127.0.0.1:8080/hooks", "http://localhost:3001/in", "http://[::1]:8080/hooks"]) {
      expect((await createEndpoint(client, { url })).url).toBe(url);
    }
  });
});
