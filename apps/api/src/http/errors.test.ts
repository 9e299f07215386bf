import type { AddressInfo } from "node:net";
import express from "express";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiResponse, as, call, createTestOrganization, useTestApi } from "../../test/harness.js";
import { errorHandler } from "./error-handler.js";
import { requestId } from "./request-id.js";
import { requestLog } from "./request-log.js";

const api = useTestApi();

const JSON_TYPE = { "content-type": "application/json" };
const ERROR_FIELDS = ["code", "message", "param", "request_id", "details"];
/** What a leaked internal looks like: a stack frame, a source file, a driver or SQL fragment. */
const INTERNALS =
  /\n|\bat \S+ \(|node_modules|\.[cm]?[jt]s:\d|postgres|drizzle|\bselect\b|\binsert\b|violates|constraint|stack/i;

function expectRequestId(response: ApiResponse) {
  expect(response.headers.get("x-parley-request-id")).toMatch(/^req_[0-9A-HJKMNP-TV-Z]{26}$/);
}

function expectRateLimitHeaders(response: ApiResponse) {
  const now = Math.floor(Date.now() / 1000);
  expect(response.headers.get("x-ratelimit-limit")).toBe("600");
  expect(response.headers.get("x-ratelimit-remaining")).toMatch(/^\d+$/);
  const reset = Number(response.headers.get("x-ratelimit-reset"));
  expect(Number.isInteger(reset)).toBe(true);
  expect(reset).toBeGreaterThanOrEqual(now);
  expect(reset).toBeLessThanOrEqual(now + 61);
}

/** The whole contract of an error response, in one place. */
function expectError(response: ApiResponse, status: number, code: string) {
  expect({ status: response.status, code: response.body?.error?.code }).toEqual({ status, code });
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  expect(Object.keys(response.body)).toEqual(["error"]);
  const error = response.body.error;
  for (const field of Object.keys(error)) expect(ERROR_FIELDS).toContain(field);
  expect(typeof error.message).toBe("string");
  expect(error.message.length).toBeGreaterThan(0);
  expect(error.message).not.toMatch(INTERNALS);
  expectRequestId(response);
  expect(error.request_id).toBe(response.headers.get("x-parley-request-id"));
  expectRateLimitHeaders(response);
  return error;
}

function expectValidationError(response: ApiResponse, params: string[]) {
  const error = expectError(response, 422, "validation_error");
  expect(params).toContain(error.param);
  expect(error.details.map((detail: { param: string }) => detail.param).sort()).toEqual([...params].sort());
  for (const detail of error.details) {
    expect(Object.keys(detail).sort()).toEqual(["message", "param"]);
    expect(detail.message).not.toMatch(INTERNALS);
  }
  return error;
}

async function newClient() {
  const org = await createTestOrganization(api);
  return { org, client: as(api, org.test) };
}

describe("error body", () => {
  it("is exactly {error: {code, message, request_id}} for a plain error", async () => {
    const { client } = await newClient();
    const response = await client.get("/contacts/cnt_00000000000000000000000000");
    const error = expectError(response, 404, "resource_not_found");
    expect(Object.keys(error).sort()).toEqual(["code", "message", "request_id"]);
  });

  it("adds param and details for a validation error", async () => {
    const { client } = await newClient();
    const error = expectValidationError(await client.post("/contacts", { body: { name: "" } }), ["name"]);
    expect(Object.keys(error).sort()).toEqual(["code", "details", "message", "param", "request_id"]);
  });

  it("carries a request id that differs on every request", async () => {
    const { client } = await newClient();
    const ids = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const response = await client.get("/contacts/nope");
      ids.add(response.body.error.request_id);
    }
    expect(ids.size).toBe(5);
  });
});

describe("headers on every response", () => {
  it("are on successes", async () => {
    const { client } = await newClient();
    const created = await client.post("/contacts", { body: { name: "Ada" } });
    const listed = await client.get("/contacts");
    for (const response of [created, listed]) {
      expect(response.status).toBeLessThan(300);
      expectRequestId(response);
      expectRateLimitHeaders(response);
    }
  });

  it("are on 401, 404 and 422 errors", async () => {
    const { client } = await newClient();
    expectError(await call(api, "GET", "/contacts"), 401, "authentication_required");
    expectError(await call(api, "GET", "/contacts", { key: "parley_live_nope" }), 401, "invalid_api_key");
    expectError(await client.get("/contacts/cnt_00000000000000000000000000"), 404, "resource_not_found");
    expectError(await client.get("/no-such-route"), 404, "route_not_found");
    expectError(await client.get("/contacts", { query: { limit: 0 } }), 422, "validation_error");
  });

  it("are on errors outside /v1 too", async () => {
    const response = await fetch(`${api.baseUrl.replace(/\/v1$/, "")}/no-such-page`);
    expectError(
      { status: response.status, headers: response.headers, body: await response.json() },
      404,
      "route_not_found",
    );
  });
});

describe("400 invalid_json", () => {
  it("refuses a body that is not valid JSON", async () => {
    const { client } = await newClient();
    const existing = await client.post("/contacts", { body: { name: "Ada" } });
    for (const rawBody of ["{", '{"name":', "{'name':'x'}", '{"name":"x",}', "name=x", "{} {}"]) {
      expectError(await client.post("/contacts", { rawBody, headers: JSON_TYPE }), 400, "invalid_json");
      const patched = await client.patch(`/contacts/${existing.body.id}`, { rawBody, headers: JSON_TYPE });
      expectError(patched, 400, "invalid_json");
    }
    expect((await client.get("/contacts")).body.data).toHaveLength(1);
  });

  it("says where the JSON breaks: line and column", async () => {
    const { client } = await newClient();
    const cases: [string, string][] = [
      ["{name:", "unexpected 'n' at line 1, column 2"],
      ['{\n  "name": "Ada"\n  "email": "a@example.com"\n}', "unexpected '\"' at line 3, column 3"],
      ['{"name": tru}', "unexpected 't' at line 1, column 10"],
      ['{"name":', "unexpected end of input at line 1, column 9"],
      ['{"name":"x",}', "unexpected '}' at line 1, column 13"],
    ];
    for (const [rawBody, where] of cases) {
      const error = expectError(await client.post("/contacts", { rawBody, headers: JSON_TYPE }), 400, "invalid_json");
      expect(error.message).toBe(`The request body is not valid JSON: ${where}.`);
    }
  });

  it("refuses JSON that is not an object", async () => {
    const { client } = await newClient();
    const existing = await client.post("/contacts", { body: { name: "Ada" } });
    for (const rawBody of ["[]", '[{"name":"x"}]', '"name"', "42", "true", "null"]) {
      expectError(await client.post("/contacts", { rawBody, headers: JSON_TYPE }), 400, "invalid_json");
      expectError(await client.post("/tags", { rawBody, headers: JSON_TYPE }), 400, "invalid_json");
      const patched = await client.patch(`/contacts/${existing.body.id}`, { rawBody, headers: JSON_TYPE });
      expectError(patched, 400, "invalid_json");
    }
    expect((await client.get("/contacts")).body.data).toHaveLength(1);
  });

  it("refuses a body sent as another content type", async () => {
    const { client } = await newClient();
    const response = await client.post("/contacts", {
      rawBody: '{"name":"x"}',
      headers: { "content-type": "text/plain" },
    });
    expectError(response, 400, "invalid_json");
  });

  it("refuses a body that cannot be decompressed", async () => {
    const { client } = await newClient();
    const response = await client.post("/contacts", {
      rawBody: '{"name":"x"}',
      headers: { ...JSON_TYPE, "content-encoding": "gzip" },
    });
    expectError(response, 400, "invalid_json");
  });
});

describe("422 validation_error", () => {
  it("names an unknown body field in details", async () => {
    const { client } = await newClient();
    const created = await client.post("/contacts", { body: { name: "Ada", nickname: "A" } });
    const error = expectValidationError(created, ["nickname"]);
    expect(error.param).toBe("nickname");

    const existing = await client.post("/contacts", { body: { name: "Ada" } });
    const patched = await client.patch(`/contacts/${existing.body.id}`, { body: { nickname: "A" } });
    expectValidationError(patched, ["nickname"]);
    expectValidationError(await client.post("/tags", { body: { name: "vip", weight: 1 } }), ["weight"]);
  });

  it("gives Stripe's hint for an unknown field: the closest known name", async () => {
    const { client } = await newClient();

    const typo = expectValidationError(await client.post("/contacts", { body: { nmae: "Ada" } }), ["nmae"]);
    expect(typo.message).toBe("Received unknown parameter: nmae. Did you mean name?");
    expect(typo.param).toBe("nmae");
    expect(typo.details).toEqual([{ param: "nmae", message: "Received unknown parameter: nmae. Did you mean name?" }]);

    const far = expectValidationError(await client.post("/contacts", { body: { nickname: "A" } }), ["nickname"]);
    expect(far.message).toBe("Received unknown parameter: nickname.");

    const query = expectValidationError(await client.get("/contacts", { query: { limt: "5" } }), ["limt"]);
    expect(query.message).toBe("Received unknown parameter: limt. Did you mean limit?");
    const camel = expectValidationError(await client.get("/contacts", { query: { externalId: "x" } }), ["externalId"]);
    expect(camel.message).toBe("Received unknown parameter: externalId. Did you mean external_id?");

    const several = expectValidationError(await client.post("/contacts", { body: { emial: "a@b.co", name: 4 } }), [
      "emial",
      "name",
    ]);
    expect(several.message).toContain("Received unknown parameter: emial. Did you mean email?");
  });

  it("names a field of the wrong type", async () => {
    const { client } = await newClient();
    expect(expectValidationError(await client.post("/contacts", { body: { name: 42 } }), ["name"]).param).toBe("name");
    expectValidationError(await client.post("/contacts", { body: { tags: "tag_x" } }), ["tags"]);
    expectValidationError(await client.post("/contacts", { body: { custom_fields: { plan: 5 } } }), [
      "custom_fields.plan",
    ]);
    expectValidationError(await client.post("/contacts", { body: { metadata: [] } }), ["metadata"]);
  });

  it("lists every fault in details", async () => {
    const { client } = await newClient();
    const response = await client.post("/contacts", { body: { name: 42, email: "not-an-email", extra: 1 } });
    expectValidationError(response, ["name", "email", "extra"]);
  });

  it("names an unknown or malformed query parameter", async () => {
    const { client } = await newClient();
    expectValidationError(await client.get("/contacts", { query: { sort: "name" } }), ["sort"]);
    expectValidationError(await client.get("/contacts", { query: { limit: "ten" } }), ["limit"]);
    expectValidationError(await client.get("/contacts", { query: { created_after: "yesterday" } }), ["created_after"]);
  });

  it("refuses a malformed id in a query string", async () => {
    const { client } = await newClient();
    for (const tagId of ["bogus", "tag_123", "cnt_00000000000000000000000000", "tag_0000000000000000000000000U"]) {
      expectValidationError(await client.get("/contacts", { query: { tag_id: tagId } }), ["tag_id"]);
    }
    expect((await client.get("/contacts", { query: { tag_id: "tag_00000000000000000000000000" } })).status).toBe(200);
  });

  it("refuses a malformed id in a body", async () => {
    const { client } = await newClient();
    expectValidationError(await client.post("/contacts", { body: { tags: ["vip"] } }), ["tags.0"]);
  });

  it("refuses text that cannot be stored: NUL characters and lone surrogates", async () => {
    const { client } = await newClient();
    expectValidationError(await client.post("/contacts", { body: { name: "A\u0000da" } }), ["name"]);
    expectValidationError(
      await client.post("/contacts", { body: { metadata: { note: { deep: ["ok", "\u0000"] } } } }),
      ["metadata.note.deep.1"],
    );
    expectValidationError(await client.post("/contacts", { body: { metadata: { "bad\u0000key": 1 } } }), [
      "metadata.bad\u0000key",
    ]);
    const surrogate = '{"metadata":{"note":"\\ud800"}}';
    expectValidationError(await client.post("/contacts", { rawBody: surrogate, headers: JSON_TYPE }), [
      "metadata.note",
    ]);
    expectValidationError(await client.get("/contacts", { query: { query: "a\u0000b" } }), ["query"]);
    expect((await client.get("/contacts")).body.data).toEqual([]);
    const emoji = await client.post("/contacts", { body: { name: "Ada 🦄", metadata: { "🔑": "✓" } } });
    expect(emoji.status).toBe(201);
    expect(emoji.body.name).toBe("Ada 🦄");
  });
});

describe("404 and 405", () => {
  it("answers an unknown route with route_not_found", async () => {
    const { client } = await newClient();
    expectError(await client.get("/no-such-route"), 404, "route_not_found");
    expectError(await client.post("/no-such-route", { body: {} }), 404, "route_not_found");
    expectError(await client.get("/contacts/cnt_00000000000000000000000000/conversations/x"), 404, "route_not_found");
    expectError(await client.get(""), 404, "route_not_found");
  });

  it("answers a known path with the wrong method with method_not_allowed and Allow", async () => {
    const { client } = await newClient();
    const cases: [ApiResponse, string[]][] = [
      [await client.put("/contacts", { body: {} }), ["GET", "POST"]],
      [await client.delete("/contacts"), ["GET", "POST"]],
      [await client.post("/contacts/cnt_00000000000000000000000000", { body: {} }), ["DELETE", "GET", "PATCH"]],
      [await client.put("/tags/tag_00000000000000000000000000", { body: {} }), ["DELETE", "PATCH"]],
      [await client.patch("/custom-fields", { body: {} }), ["GET", "POST"]],
    ];
    for (const [response, allowed] of cases) {
      expectError(response, 405, "method_not_allowed");
      const allow = (response.headers.get("allow") ?? "").split(",").map((method) => method.trim());
      expect(allow.sort()).toEqual(allowed);
    }
  });

  it("answers an unknown contact id with resource_not_found, even a malformed one", async () => {
    const { client } = await newClient();
    const ids = [
      "cnt_00000000000000000000000000",
      "cnt_7zzzzzzzzzzzzzzzzzzzzzzzzz",
      "not-an-id",
      "cnt_123",
      "tag_00000000000000000000000000",
      "%20",
      "..%2F..%2Fetc",
      "x".repeat(500),
      "%E0%A4%A",
      "%ED%A0%80",
      "cnt_%00",
    ];
    for (const id of ids) {
      expectError(await client.get(`/contacts/${id}`), 404, "resource_not_found");
      expectError(await client.patch(`/contacts/${id}`, { body: { name: "x" } }), 404, "resource_not_found");
      expectError(await client.delete(`/contacts/${id}`), 404, "resource_not_found");
      expectError(await client.patch(`/tags/${id}`, { body: { name: "x" } }), 404, "resource_not_found");
    }
  });

  it("answers a contact of another organization with resource_not_found", async () => {
    const { client } = await newClient();
    const other = await newClient();
    const foreign = await other.client.post("/contacts", { body: { name: "Not yours" } });
    expectError(await client.get(`/contacts/${foreign.body.id}`), 404, "resource_not_found");
    expectError(await client.delete(`/contacts/${foreign.body.id}`), 404, "resource_not_found");
    expect((await other.client.get(`/contacts/${foreign.body.id}`)).status).toBe(200);
  });

  it("finds a contact by its id in any letter case", async () => {
    const { client } = await newClient();
    const created = await client.post("/contacts", { body: { name: "Ada" } });
    const lower = `cnt_${created.body.id.slice(4).toLowerCase()}`;
    const found = await client.get(`/contacts/${lower}`);
    expect(found.status).toBe(200);
    expect(found.body.id).toBe(created.body.id);
  });
});

describe("500 internal_error", () => {
  let baseUrl = "";
  let close: () => Promise<void> = async () => {};

  beforeAll(async () => {
    const app = express();
    app.use(requestId);
    app.use(requestLog(app, pino({ level: "silent" })));
    app.get("/boom", () => {
      throw new Error('relation "secret_table" does not exist at query (/srv/app/node_modules/postgres/src/x.js:1:1)');
    });
    app.get("/boom-async", async () => {
      throw Object.assign(new Error("password authentication failed for user admin"), { status: 503, expose: true });
    });
    app.use(errorHandler);
    const server = app.listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    close = () => new Promise((resolve) => server.close(() => resolve()));
  });
  afterAll(() => close());

  it("never passes on the message or stack of an unexpected error", async () => {
    for (const path of ["/boom", "/boom-async"]) {
      const response = await fetch(baseUrl + path);
      const text = await response.text();
      expect(response.status).toBe(500);
      const body = JSON.parse(text);
      expect(Object.keys(body.error).sort()).toEqual(["code", "message", "request_id"]);
      expect(body.error.code).toBe("internal_error");
      expect(body.error.request_id).toBe(response.headers.get("x-parley-request-id"));
      expect(text).not.toMatch(/secret_table|node_modules|password|admin|\.js:\d/);
    }
  });
});
