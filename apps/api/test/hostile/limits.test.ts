import http from "node:http";
import zlib from "node:zlib";
import { operations } from "@parley/schema";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectChannel } from "../../src/channels/service.js";
import { loadConfig } from "../../src/config.js";
import { createUser } from "../../src/organizations/organizations.js";
import { type RunningApi, startApi } from "../../src/server.js";
import { addTeamMember } from "../../src/teams/service.js";
import { makeImage, makePdf, multipartBody, pngChunk, postUploadBody, upload, uploadNamed } from "../files.js";
import {
  type ApiResponse,
  as,
  call,
  createTestOrganization,
  expectError,
  type TestOrganization,
  useTestApi,
} from "../harness.js";
import { nested, toJson } from "./arbitraries.js";
import { populateTenant, type TenantFixture, tinyPng } from "./fixtures.js";
import { digestChanges, rawExchange, tenantDigest } from "./support.js";

/**
 * What a hostile client can send beyond the schemas: oversized headers and bodies, slow
 * clients, broken multipart, decompression bombs, dangerous file names, forged cursors,
 * and injection strings in every text field and filter.
 */

const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "1000000" });

/** A POST with `Transfer-Encoding: chunked` (no Content-Length) whose body `write` streams; the JSON answer. */
function postChunked(
  path: string,
  headers: Record<string, string>,
  write: (req: http.ClientRequest) => void,
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const url = new URL(`${api.baseUrl}${path}`);
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        headers: { ...headers, "transfer-encoding": "chunked" },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk) => chunks.push(chunk));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) }),
        );
      },
    );
    req.on("error", reject);
    write(req);
  });
}
const JSON_TYPE = { "content-type": "application/json" };

/** Node's own refusals answer like every response (issue 23, item 5): request id, rate-limit headers, error body. */
function expectRefusalBody(received: string, code: string) {
  const [head = "", body = ""] = received.split("\r\n\r\n");
  const requestId = /^x-parley-request-id: (req_\w+)$/im.exec(head)?.[1];
  expect(requestId, head).toBeDefined();
  expect(head).toMatch(/^x-ratelimit-limit: \d+$/im);
  expect(head).toMatch(/^content-type: application\/json/im);
  expect(JSON.parse(body)).toEqual({ error: { code, message: expect.any(String), request_id: requestId } });
}

function portOf(testApi: { baseUrl: string }): number {
  return Number(new URL(testApi.baseUrl).port);
}

async function attachmentCount(organizationId: string): Promise<number> {
  const [row] = await api.client.sql<{ count: number }[]>`
    select count(*)::int as count from attachments where organization_id = ${organizationId}`;
  return row?.count ?? -1;
}

async function responsive(key: string) {
  const response = await as(api, key).get("/api-keys/current");
  expect(response.status).toBe(200);
}

// ---------------------------------------------------------------- headers

describe("oversized headers: node's own 431, and the server keeps serving", () => {
  let org: TestOrganization;
  beforeAll(async () => {
    org = await createTestOrganization(api);
  });

  const request = (extra: string, path = "/v1/api-keys/current") =>
    `GET ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${org.test}\r\n${extra}\r\n`;

  it.each([
    ["one 64 KB header", () => request(`X-Big: ${"a".repeat(64 * 1024)}\r\n`)],
    ["a 64 KB URL", () => request("", `/v1/contacts?query=${"a".repeat(64 * 1024)}`)],
    ["3,000 small headers", () => request(Array.from({ length: 3000 }, (_, i) => `X-H${i}: v\r\n`).join(""))],
    ["a 20 KB Authorization header", () => request("").replace(org.test, "a".repeat(20 * 1024))],
  ])("answers %s with 431 and closes the connection", async (_name, build) => {
    const outcome = await rawExchange(portOf(api), [build()], { giveUpMs: 5_000 });
    expect(outcome.status, outcome.received.slice(0, 200)).toBe(431);
    expect(outcome.closedByServer).toBe(true);
    expectRefusalBody(outcome.received, "headers_too_large");
    await responsive(org.test);
  });

  it("answers bytes that are not HTTP with 400 malformed_request, a request id and the error body", async () => {
    const outcome = await rawExchange(portOf(api), ["NOT HTTP AT ALL\r\n\r\n"], { giveUpMs: 5_000 });
    expect(outcome.status).toBe(400);
    expect(outcome.closedByServer).toBe(true);
    expectRefusalBody(outcome.received, "malformed_request");
  });

  it("serves a request whose headers stay under the 16 KB limit", async () => {
    const outcome = await rawExchange(portOf(api), [`${request(`X-Big: ${"a".repeat(12 * 1024)}\r\n`)}`], {
      giveUpMs: 1_500,
    });
    expect(outcome.status).toBe(200);
  });
});

// ---------------------------------------------------------------- Express's own settings

describe("Express's own settings", () => {
  it("answers without X-Powered-By or an ETag, so a conditional GET is served in full", async () => {
    const org = await createTestOrganization(api);
    const client = as(api, org.test);
    const first = await client.get("/api-keys/current");
    expect(first.status).toBe(200);
    expect(first.headers.get("x-powered-by")).toBeNull();
    expect(first.headers.get("etag")).toBeNull();

    const conditional = await client.get("/api-keys/current", { headers: { "if-none-match": "*" } });
    expect(conditional.status).toBe(200);
    expect(conditional.body).toEqual(first.body);
  });
});

// ---------------------------------------------------------------- JSON bodies

describe("oversized and malformed JSON bodies", () => {
  let fixture: TenantFixture;
  beforeAll(async () => {
    fixture = await populateTenant(api, await createTestOrganization(api), "test", "bodies");
  });

  it("refuses a body over 1 MB with 413 payload_too_large and stores nothing", async () => {
    const before = await tenantDigest(api.client.sql, [fixture.org.id]);
    const rawBody = JSON.stringify({ name: "Big", metadata: { blob: "x".repeat(1024 * 1024) } });
    expectError(await fixture.client.post("/contacts", { rawBody, headers: JSON_TYPE }), 413, "payload_too_large");
    const patched = await fixture.client.patch(`/contacts/${fixture.ids.contact[0]}`, { rawBody, headers: JSON_TYPE });
    expectError(patched, 413, "payload_too_large");
    expect(digestChanges(before, await tenantDigest(api.client.sql, [fixture.org.id]))).toEqual([]);
  });

  it("refuses a chunked body (no Content-Length) over 1 MB with 413", async () => {
    const response = await postChunked("/contacts", { authorization: `Bearer ${fixture.key}`, ...JSON_TYPE }, (req) => {
      req.write('{"metadata":{"blob":"');
      for (let i = 0; i < 40; i++) req.write("y".repeat(64 * 1024));
      req.end('"}}');
    });
    expect(response.status).toBe(413);
    expect(response.body.error.code).toBe("payload_too_large");
  });

  it("accepts a body just under 1 MB", async () => {
    const rawBody = JSON.stringify({ name: "Almost big", metadata: { blob: "z".repeat(1024 * 1024 - 200) } });
    expect(Buffer.byteLength(rawBody)).toBeLessThan(1024 * 1024);
    const response = await fixture.client.post("/contacts", { rawBody, headers: JSON_TYPE });
    expect(response.status, JSON.stringify(response.body).slice(0, 200)).toBe(201);
  });

  it("refuses JSON nested deeper than 64 levels with 422 naming the field, never a 5xx; 64 levels pass", async () => {
    const before = await tenantDigest(api.client.sql, [fixture.org.id]);
    // The body is level 1, `metadata` level 2, its `a` level 3: 62 arrays reach level 64.
    const atLimit = await fixture.client.post("/contacts", {
      rawBody: toJson({ metadata: { a: nested(62, "array") } }),
      headers: JSON_TYPE,
    });
    expect(atLimit.status, JSON.stringify(atLimit.body).slice(0, 200)).toBe(201);
    const afterAtLimit = await tenantDigest(api.client.sql, [fixture.org.id]);
    expect(digestChanges(before, afterAtLimit)).toContain("contacts");
    for (const depth of [63, 1_000, 5_000, 100_000, 400_000]) {
      for (const kind of ["array", "object"] as const) {
        const rawBody = toJson({ metadata: { a: nested(depth, kind) } });
        const response = await fixture.client.post("/contacts", { rawBody, headers: JSON_TYPE });
        if (Buffer.byteLength(rawBody) > 1024 * 1024) expectError(response, 413, "payload_too_large");
        else expectError(response, 422, "validation_error", "metadata");
        const update = await fixture.client.patch(`/conversations/${fixture.conversationId}`, {
          rawBody: toJson({ metadata: nested(Math.min(depth, 100_000), kind) }),
          headers: JSON_TYPE,
        });
        expectError(update, 422, "validation_error", "metadata");
      }
    }
    expect(digestChanges(afterAtLimit, await tenantDigest(api.client.sql, [fixture.org.id]))).toEqual([]);
  });

  it("refuses a web chat body over 64 KB with 413 and one holding a NUL character with 422", async () => {
    const channel = fixture.ids.channel.find(Boolean) as string;
    const channels = await fixture.client.get("/channels", { query: { type: "webchat" } });
    const webchat = channels.body.data[0]?.id ?? channel;
    const big = await call(api, "POST", `/webchat/channels/${webchat}/sessions`, {
      rawBody: JSON.stringify({ name: "x".repeat(70 * 1024) }),
      headers: JSON_TYPE,
    });
    expectError(big, 413, "payload_too_large");
    const nul = await call(api, "POST", `/webchat/channels/${webchat}/sessions`, {
      body: { name: "a\u0000b" },
    });
    expectError(nul, 422, "validation_error", "name");
    const nulId = await call(api, "POST", "/webchat/channels/chn_%00/sessions", { body: {} });
    expectError(nulId, 404, "resource_not_found");
    const page = await fetch(`${api.baseUrl.replace(/\/v1$/, "")}/webchat/%00`);
    expect(page.status).toBe(404);
  });

  it("answers a body longer than its Content-Length with a 400, never a 5xx, creating nothing", async () => {
    const before = await tenantDigest(api.client.sql, [fixture.org.id]);
    const body = '{"name":"Ada Lovelace"}';
    const head = `POST /v1/contacts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${fixture.key}\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n`;
    const outcome = await rawExchange(portOf(api), [head + body], { giveUpMs: 3_000 });
    // The ten bytes are not JSON (400 invalid_json); the rest is not a request (node's 400):
    // which answer comes first is a race, both are 400 and the connection ends.
    expect(outcome.status).toBe(400);
    expect(outcome.received).not.toMatch(/HTTP\/1\.1 5\d\d/);
    expect(outcome.closedByServer).toBe(true);
    // The JSON parser skips a request whose connection is gone: never run with `{}` instead.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(digestChanges(before, await tenantDigest(api.client.sql, [fixture.org.id]))).toEqual([]);
  });
});

// ---------------------------------------------------------------- slow clients

describe("slow clients, on the server as `pnpm start` builds it (short bounds from the environment)", () => {
  const HEADERS_MS = 1_000;
  const REQUEST_MS = 2_000;
  const KEEP_ALIVE_MS = 500;
  let running: RunningApi;
  let port = 0;
  let key = "";

  beforeAll(async () => {
    const config = loadConfig({
      PORT: "0",
      HOST: "127.0.0.1",
      HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
      HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_MS),
      HTTP_KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_MS),
    });
    running = await startApi(inject("databaseUrl"), config, pino({ level: "silent" }));
    port = running.port;
    key = (await createTestOrganization({ ...api, context: running.context })).test;
  });
  afterAll(() => running?.close());

  it("reads the bounds from the environment, refusing a request timeout below the headers timeout", () => {
    const config = loadConfig({});
    expect([config.HTTP_HEADERS_TIMEOUT_MS, config.HTTP_REQUEST_TIMEOUT_MS, config.HTTP_KEEP_ALIVE_TIMEOUT_MS]).toEqual(
      [20_000, 120_000, 5_000],
    );
    expect(() => loadConfig({ HTTP_HEADERS_TIMEOUT_MS: "5000", HTTP_REQUEST_TIMEOUT_MS: "1000" })).toThrow(
      /HTTP_REQUEST_TIMEOUT_MS/,
    );
  });

  it("cuts off a client that sends its headers byte by byte, within the headers timeout", async () => {
    const head = `GET /v1/api-keys/current HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nX-Slow: ${"z".repeat(200)}`;
    const outcome = await rawExchange(port, [...head], { delayMs: 50, giveUpMs: 8_000 });
    expect(outcome.closedByServer, "the server never closed the connection").toBe(true);
    expect(outcome.closedAfterMs).toBeGreaterThanOrEqual(HEADERS_MS - 100);
    expect(outcome.closedAfterMs).toBeLessThan(HEADERS_MS + 1_500);
    expect(outcome.status).toBe(408);
    expectRefusalBody(outcome.received, "request_timeout");
  });

  it("cuts off a client that sends its body too slowly, within the request timeout", async () => {
    const head = `POST /v1/contacts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`;
    const outcome = await rawExchange(port, [head, ...'{"name":"'.padEnd(200, "a")], { delayMs: 50, giveUpMs: 10_000 });
    expect(outcome.closedByServer, "the server never closed the connection").toBe(true);
    expect(outcome.closedAfterMs).toBeLessThan(REQUEST_MS + 1_500);
    expect(outcome.status).toBe(408);
    expectRefusalBody(outcome.received, "request_timeout");
  });

  it("cuts off a client that declares a body and never sends it", async () => {
    const head = `POST /v1/contacts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{"a"`;
    const outcome = await rawExchange(port, [head], { giveUpMs: 10_000 });
    expect(outcome.closedByServer).toBe(true);
    expect(outcome.closedAfterMs).toBeLessThan(REQUEST_MS + 1_500);
  });

  it("closes an idle keep-alive connection after the keep-alive timeout", async () => {
    const outcome = await rawExchange(
      port,
      [`GET /v1/api-keys/current HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`],
      { giveUpMs: 6_000 },
    );
    expect(outcome.status).toBe(200);
    expect(outcome.closedByServer).toBe(true);
    expect(outcome.closedAfterMs).toBeLessThan(KEEP_ALIVE_MS + 1_500);
  });

  it("serves a client that is slow but within the bounds", async () => {
    const head = `GET /v1/api-keys/current HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`;
    const pieces = head.match(/[\s\S]{1,10}/g) ?? [];
    // About a third of the headers timeout, spread over the whole head.
    const outcome = await rawExchange(port, pieces, {
      delayMs: Math.floor(HEADERS_MS / 3 / pieces.length),
      giveUpMs: 5_000,
    });
    expect(outcome.status).toBe(200);
  });
});

// ---------------------------------------------------------------- uploads

describe("oversized and malformed uploads", () => {
  let org: TestOrganization;
  beforeAll(async () => {
    org = await createTestOrganization(api);
  });

  it("refuses a streamed upload (chunked, no Content-Length) over 16 MB with 413 and stores nothing", async () => {
    const boundary = "streamedBoundary";
    const headers = {
      authorization: `Bearer ${org.test}`,
      "content-type": `multipart/form-data; boundary=${boundary}`,
    };
    const response = await postChunked("/uploads", headers, (req) => {
      req.write(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\nContent-Type: text/plain\r\n\r\n`,
      );
      const megabyte = Buffer.alloc(1024 * 1024, "a");
      for (let i = 0; i < 17; i++) req.write(megabyte);
      req.end(`\r\n--${boundary}--\r\n`);
    });
    expect(response.status).toBe(413);
    expect(response.body.error.code).toBe("payload_too_large");
    expect(await attachmentCount(org.id)).toBe(0);
    await responsive(org.test);
  });

  const pdf = makePdf("multipart");
  const part = (field: string, filename: string, type: string, bytes: Buffer | string) =>
    Buffer.concat([
      Buffer.from(
        `Content-Disposition: form-data; name="${field}"; filename="${filename}"\r\nContent-Type: ${type}\r\n\r\n`,
      ),
      Buffer.from(bytes),
    ]);
  const form = (boundary: string, parts: Buffer[], closing = true) =>
    Buffer.concat([
      ...parts.flatMap((each) => [Buffer.from(`--${boundary}\r\n`), each, Buffer.from("\r\n")]),
      Buffer.from(closing ? `--${boundary}--\r\n` : ""),
    ]);
  const B = "xBoundary42";
  const multipart = `multipart/form-data; boundary=${B}`;

  it.each<[string, () => { body: Buffer; type: string | undefined }, number, string]>([
    [
      "no boundary",
      () => ({ body: form(B, [part("file", "a.pdf", "application/pdf", pdf)]), type: "multipart/form-data" }),
      415,
      "unsupported_media_type",
    ],
    [
      "an empty boundary",
      () => ({
        body: form(B, [part("file", "a.pdf", "application/pdf", pdf)]),
        type: "multipart/form-data; boundary=",
      }),
      415,
      "unsupported_media_type",
    ],
    [
      "no Content-Type at all",
      () => ({ body: form(B, [part("file", "a.pdf", "application/pdf", pdf)]), type: undefined }),
      415,
      "unsupported_media_type",
    ],
    [
      "a body cut inside the file",
      () => ({ body: form(B, [part("file", "a.pdf", "application/pdf", pdf)]).subarray(0, 200), type: multipart }),
      422,
      "validation_error",
    ],
    [
      "a body cut inside the part's headers",
      () => ({ body: Buffer.from(`--${B}\r\nContent-Disposition: form-da`), type: multipart }),
      422,
      "validation_error",
    ],
    [
      "no closing boundary",
      () => ({ body: form(B, [part("file", "a.pdf", "application/pdf", pdf)], false), type: multipart }),
      422,
      "validation_error",
    ],
    [
      "another boundary than declared",
      () => ({ body: form("otherBoundary", [part("file", "a.pdf", "application/pdf", pdf)]), type: multipart }),
      422,
      "validation_error",
    ],
    [
      "two files in the field file",
      () => ({
        body: form(B, [part("file", "a.pdf", "application/pdf", pdf), part("file", "b.pdf", "application/pdf", pdf)]),
        type: multipart,
      }),
      422,
      "validation_error",
    ],
    [
      "no field file, only a text field",
      () => ({
        body: form(B, [Buffer.from('Content-Disposition: form-data; name="file"\r\n\r\nnot a file')]),
        type: multipart,
      }),
      422,
      "validation_error",
    ],
    [
      "the file in another field",
      () => ({ body: form(B, [part("upload", "a.pdf", "application/pdf", pdf)]), type: multipart }),
      422,
      "validation_error",
    ],
    [
      "a part without Content-Disposition",
      () => ({
        body: form(B, [Buffer.from(`Content-Type: application/pdf\r\n\r\n${pdf.toString("latin1")}`, "latin1")]),
        type: multipart,
      }),
      422,
      "validation_error",
    ],
    [
      "only the closing boundary",
      () => ({ body: Buffer.from(`--${B}--\r\n`), type: multipart }),
      422,
      "validation_error",
    ],
    ["an empty body", () => ({ body: Buffer.alloc(0), type: multipart }), 422, "validation_error"],
  ])("refuses %s with a 4xx naming the problem, storing nothing", async (_name, build, status, code) => {
    const { body, type } = build();
    const response = await postUploadBody(api, org.test, body, type === undefined ? {} : { "content-type": type });
    expectError(response, status, code);
    if (code === "validation_error") expect(response.body.error.param).toBe("file");
    expect(await attachmentCount(org.id)).toBe(0);
  });

  it("accepts the same form when it is well-formed (the refusals above are the defects, not the form)", async () => {
    const response = await postUploadBody(api, org.test, form(B, [part("file", "a.pdf", "application/pdf", pdf)]), {
      "content-type": multipart,
    });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    await api.client.sql`delete from attachments where organization_id = ${org.id}`;
  });

  it("does not leave a keep-alive connection hanging after a multipart body the parser gives up on", async () => {
    // The parser fails at the part's headers; the rest of the body is still on the wire.
    const broken = Buffer.concat([
      Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="file"; filename="a.pdf"\r\n`),
      Buffer.from(`X-Header-Line: ${"h".repeat(90 * 1024)}\r\n\r\n`),
      pdf,
      Buffer.from(`\r\n--${B}--\r\n`),
    ]);
    const first = `POST /v1/uploads HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${org.test}\r\nContent-Type: ${multipart}\r\nContent-Length: ${broken.length}\r\n\r\n`;
    const second = `GET /v1/api-keys/current HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${org.test}\r\n\r\n`;
    const outcome = await rawExchange(portOf(api), [Buffer.concat([Buffer.from(first), broken]), second], {
      giveUpMs: 3_000,
    });
    expect(outcome.status, outcome.received.slice(0, 300)).toBe(422);
    // Either the second request is answered on the same connection, or the server says
    // `Connection: close` and closes it at once: never a connection left waiting.
    const answeredSecond = /HTTP\/1\.1 200/.test(outcome.received);
    const closedAtOnce = /connection: close/i.test(outcome.received) && outcome.closedByServer;
    expect(answeredSecond || closedAtOnce, outcome.received.slice(0, 600)).toBe(true);
    expect(outcome.closedAfterMs).toBeLessThan(2_500);
  });
});

// ---------------------------------------------------------------- decompression bombs

/**
 * A PNG declaring `width` × `height` 1-bit grey pixels. `rows` of real (all-zero) image
 * data are compressed into it; fewer rows than `height` make a truncated stream.
 */
function bombPng(width: number, height: number, rows = height, padTo = 0): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 1; // bit depth
  header[9] = 0; // greyscale
  const raw = Buffer.alloc((1 + Math.ceil(width / 8)) * rows);
  const chunks = [pngChunk("IHDR", header), pngChunk("IDAT", zlib.deflateSync(raw, { level: 9 }))];
  if (padTo > 0) chunks.push(pngChunk("tEXt", Buffer.concat([Buffer.from("Comment\0"), Buffer.alloc(padTo, 0x61)])));
  chunks.push(pngChunk("IEND", Buffer.alloc(0)));
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), ...chunks]);
}

/** A baseline JPEG header declaring `width` × `height`, with no image data after it. */
function bombJpeg(width: number, height: number): Buffer {
  const sof = Buffer.from([
    0xff, 0xc0, 0x00, 0x11, 0x08, 0, 0, 0, 0, 0x03, 0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01,
  ]);
  sof.writeUInt16BE(height, 5);
  sof.writeUInt16BE(width, 7);
  return Buffer.concat([Buffer.from([0xff, 0xd8]), sof, Buffer.from([0xff, 0xd9])]);
}

describe("image decompression bombs", () => {
  let org: TestOrganization;
  beforeAll(async () => {
    org = await createTestOrganization(api);
  });

  it.each<[string, () => Buffer, string]>([
    ["a PNG declaring 50,000 × 50,000 pixels", () => bombPng(50_000, 50_000, 4), "image/png"],
    [
      "a 30 KB PNG declaring 16,000 × 16,000 pixels (256 megapixels of real data)",
      () => bombPng(16_000, 16_000),
      "image/png",
    ],
    ["a 400 KB+ PNG declaring 20,000 × 20,000 pixels", () => bombPng(20_000, 20_000, 16, 420 * 1024), "image/png"],
    ["a PNG declaring 6,000 × 6,000 pixels in 5 KB", () => bombPng(6_000, 6_000), "image/png"],
    ["a JPEG declaring 65,000 × 65,000 pixels", () => bombJpeg(65_000, 65_000), "image/jpeg"],
  ])("refuses %s quickly with 422, without crashing", async (_name, build, type) => {
    const bytes = build();
    const started = Date.now();
    const response = await upload(api, org.test, { bytes, type, filename: "bomb.png" });
    const elapsed = Date.now() - started;
    expectError(response, 422, "validation_error", "file");
    expect(elapsed).toBeLessThan(3_000);
    expect(await attachmentCount(org.id)).toBe(0);
    await responsive(org.test);
  });

  it("still accepts real images of ordinary size, small and large", async () => {
    const small = await upload(api, org.test, { bytes: await tinyPng(), type: "image/png", filename: "dot.png" });
    expect(small.status).toBe(201);
    const photo = await makeImage("jpeg", { width: 4000, height: 3000, noise: 0.3 });
    const large = await upload(api, org.test, { bytes: photo, type: "image/jpeg", filename: "photo.jpg" });
    expect(large.status, JSON.stringify(large.body)).toBe(201);
  });
});

// ---------------------------------------------------------------- file names

describe("hostile file names: stored as data, served in one safe header", () => {
  let org: TestOrganization;
  beforeAll(async () => {
    org = await createTestOrganization(api);
  });

  /** The `filename*` parameter of a Content-Disposition, decoded. */
  function extendedFilename(disposition: string): string | undefined {
    const match = /(?:^|;)\s*filename\*=UTF-8''([^;\s]+)/i.exec(disposition);
    return match?.[1] === undefined ? undefined : decodeURIComponent(match[1]);
  }

  async function downloadRaw(url: string) {
    const path = new URL(url).pathname;
    const outcome = await rawExchange(
      portOf(api),
      [`GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${org.test}\r\nConnection: close\r\n\r\n`],
      { giveUpMs: 3_000 },
    );
    const head = outcome.received.split("\r\n\r\n")[0] ?? "";
    return { status: outcome.status, head, lines: head.split("\r\n") };
  }

  it.each([
    ["../../x.png"],
    ["..\\..\\windows\\x.png"],
    ["/etc/passwd.png"],
    ["a\r\nX-Injected: 1.png"],
    ["a\nSet-Cookie: session=stolen.png"],
    ['quote"; filename="evil.exe.png'],
    ["evil\u202egnp.exe.png"],
    ["%2e%2e%2fx.png"],
    [`${"long-".repeat(200)}.png`],
    ["日本語の写真 🦄.png"],
  ])("keeps %j as a name, never as a path or a header", async (filename) => {
    const response = await uploadNamed(api, org.test, filename, "image/png", await tinyPng());
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    const stored: string = response.body.filename;
    // A client path is reduced to its last segment (busboy), the rest kept exactly, at most 255 characters.
    expect(Array.from(stored).length).toBeLessThanOrEqual(255);
    expect(stored).not.toMatch(/[/\\]/);
    const lastSegment = filename.split(/[/\\]/).pop() as string;
    expect(lastSegment.startsWith(stored) || stored === Array.from(lastSegment).slice(0, 255).join("")).toBe(true);
    // The bytes live in the database under the attachment's id, not in a file named after it.
    const [row] = await api.client.sql<{ n: number }[]>`
      select count(*)::int as n from attachment_contents where attachment_id = ${response.body.id}`;
    expect(row?.n).toBe(1);

    const download = await downloadRaw(response.body.url);
    expect(download.status).toBe(200);
    const dispositions = download.lines.filter((line) => /^content-disposition:/i.test(line));
    expect(dispositions).toHaveLength(1);
    const disposition = (dispositions[0] as string).replace(/^content-disposition:\s*/i, "");
    expect(disposition).toMatch(
      /^attachment; filename="[\x20\x21\x23-\x5b\x5d-\x7e]*"; filename\*=UTF-8''[!#$&+.^_`|~0-9A-Za-z%-]+$/,
    );
    expect(extendedFilename(disposition)).toBe(stored);
    expect(download.lines.some((line) => /^(x-injected|set-cookie):/i.test(line))).toBe(false);
    expect(download.lines).toContain("X-Content-Type-Options: nosniff");
    expect(download.lines).toContain("Content-Type: image/png");
  });

  it("answers a raw CR LF inside a quoted multipart filename with a 4xx or a stored name, never a 5xx or an injected header", async () => {
    const { body, contentType } = multipartBody(
      'name="file"; filename="a\r\nX-Injected: 1.png"',
      "image/png",
      await tinyPng(),
    );
    const response = await postUploadBody(api, org.test, body, { "content-type": contentType });
    expect(response.status).toBeLessThan(500);
    expect(response.headers.get("x-injected")).toBeNull();
    if (response.status === 201) {
      const download = await downloadRaw(response.body.url);
      expect(download.lines.some((line) => /^x-injected:/i.test(line))).toBe(false);
    }
  });
});

// ---------------------------------------------------------------- cursors

/** Every list of the catalogue (operations taking `after`), with its path made concrete. */
const listOperations = operations.filter((operation) => operation.method === "get" && operation.query?.shape.after);

describe("cursors of every shape, on every list", () => {
  let own: TenantFixture;
  let other: TenantFixture;
  let otherEnvironment: TenantFixture;
  const cursors = new Map<string, string>();
  const otherCursors = new Map<string, string>();
  const otherEnvironmentCursors = new Map<string, string>();

  /** Two of everything a list shows, so `limit=1` gives a next cursor. */
  async function secondOfEverything(fixture: TenantFixture) {
    const { client, ids, org } = fixture;
    await client.post(`/conversations/${fixture.conversationId}/notes`, { body: { body: "second note" } });
    const team = await client.post("/teams", { body: { name: "Second team" } });
    ids.team.push(team.body.id);
    const user = await createUser(api.context.db, {
      organizationId: org.id,
      name: "Second agent",
      email: `second.${fixture.environment}.${team.body.id}@example.com`,
    });
    await addTeamMember(api.context.db, { organizationId: org.id, teamId: ids.team[0] as string, userId: user.id });
    await client.post("/webhooks", { body: { url: "http://127.0.0.1:9/second", events: ["*"] } });
    await client.post(`/webhooks/${ids.webhook[0]}/test`);
    await optedOutTwice(fixture);
  }

  /** The first contact opted out of two SMS numbers: two rows of its opt-outs list. */
  async function optedOutTwice(fixture: TenantFixture) {
    const contactId = fixture.ids.contact[0] as string;
    for (const index of [1, 2]) {
      const channel = await connectChannel(api.context.db, api.context.secretBox, {
        organizationId: fixture.org.id,
        environment: fixture.environment,
        type: "sms",
        name: `SMS ${index}`,
        provider: "twilio",
        settings: {
          provider: "twilio",
          account_sid: `AC${"0".repeat(31)}${index}`,
          auth_token: "a".repeat(32),
          from: `+1415555${String(Math.floor(Math.random() * 10_000)).padStart(4, "0")}`,
        },
      });
      await api.client.sql`
        insert into sms_opt_outs (id, organization_id, environment, contact_id, channel_id, keyword)
        values (${`opt_${channel.id}`}, ${fixture.org.id}, ${fixture.environment}, ${contactId}, ${channel.id}, 'STOP')`;
    }
  }

  function concrete(fixture: TenantFixture, path: string): string {
    return path.replace(/\{(\w+)\}/g, (_, name: string) => {
      if (name === "conversation_id") return fixture.conversationId;
      if (name === "contact_id") return fixture.ids.contact[0] as string;
      if (name === "team_id") return fixture.ids.team[0] as string;
      if (name === "webhook_id") return fixture.ids.webhook[0] as string;
      throw new Error(`no fixture for ${name}`);
    });
  }

  async function cursorOf(fixture: TenantFixture, path: string): Promise<string> {
    const page = await fixture.client.get(concrete(fixture, path), { query: { limit: 1 } });
    expect(page.status, `${path}: ${JSON.stringify(page.body)}`).toBe(200);
    expect(page.body.pagination.has_more, path).toBe(true);
    return page.body.pagination.next_cursor;
  }

  beforeAll(async () => {
    const org = await createTestOrganization(api);
    own = await populateTenant(api, org, "test", "cursor");
    otherEnvironment = await populateTenant(api, org, "live", "cursorlive");
    other = await populateTenant(api, await createTestOrganization(api), "test", "cursorother");
    for (const fixture of [own, other, otherEnvironment]) await secondOfEverything(fixture);
    for (const operation of listOperations) {
      cursors.set(operation.id, await cursorOf(own, operation.path));
      otherCursors.set(operation.id, await cursorOf(other, operation.path));
      // The live environment has no channels: its channel list has no second page.
      if (operation.id !== "channels.list") {
        otherEnvironmentCursors.set(operation.id, await cursorOf(otherEnvironment, operation.path));
      }
    }
  }, 60_000);

  it("covers every list of the catalogue", () => {
    expect(listOperations.map((operation) => operation.id).sort()).toEqual(
      operations
        .filter((operation) => operation.id.endsWith(".list"))
        .map((operation) => operation.id)
        .sort(),
    );
  });

  for (const operation of listOperations) {
    it(`${operation.id}: follows its own cursor, refuses every other with 422 invalid_cursor`, async () => {
      const path = concrete(own, operation.path);
      const cursor = cursors.get(operation.id) as string;
      const next = await own.client.get(path, { query: { limit: 1, after: cursor } });
      expect(next.status).toBe(200);

      const [payload = "", signature = ""] = cursor.split(".");
      const flipped = cursor.replace(/[A-Za-z]/, (char) =>
        char === char.toLowerCase() ? char.toUpperCase() : char.toLowerCase(),
      );
      const foreign = [
        cursor.slice(0, -1),
        cursor.slice(0, Math.floor(cursor.length / 2)),
        `${cursor}x`,
        `${cursor}.`,
        flipped,
        `${payload}.`,
        `.${signature}`,
        `${signature}.${payload}`,
        `${payload}..${signature}`,
        `${Buffer.from("9999999999~cnt_00000000000000000000000000").toString("base64url")}.${signature}`,
        "",
        ".",
        "..",
        "a.b",
        "a.b.c",
        "null",
        "0",
        "-1",
        "'; drop table contacts; --",
        '{"$gt":""}',
        "../../etc/passwd",
        "🦄.🦄",
        "x".repeat(81),
        `${cursor}${"A".repeat(81 - cursor.length)}`,
        ...listOperations.filter((each) => each.id !== operation.id).map((each) => cursors.get(each.id) as string),
        otherCursors.get(operation.id) as string,
        ...(otherEnvironmentCursors.has(operation.id) ? [otherEnvironmentCursors.get(operation.id) as string] : []),
      ];
      for (const after of foreign) {
        if (after === cursor) continue;
        const response = await own.client.get(path, { query: { limit: 1, after } });
        expectError(response, 422, "invalid_cursor", "after");
      }
      // A NUL cannot even be stored: a validation error of the query, as everywhere. Bytes
      // that are not UTF-8 decode to U+FFFD: just another cursor that was never issued.
      expectError(await own.client.get(path, { query: { after: "a\u0000b" } }), 422, "validation_error", "after");
      for (const raw of ["%ED%A0%80", "%FF%FE", "%E0%A4%A"]) {
        const response = await call(api, "GET", `${path}?after=${raw}`, { key: own.key });
        expectError(response, 422, "invalid_cursor", "after");
      }
      // Two cursors are not one: the query parameter itself is malformed.
      const twice = await call(
        api,
        "GET",
        `${path}?after=${encodeURIComponent(cursor)}&after=${encodeURIComponent(cursor)}`,
        {
          key: own.key,
        },
      );
      expectError(twice, 422, "validation_error", "after");
    });
  }
});

// ---------------------------------------------------------------- injection

const INJECTIONS = [
  "'; drop table contacts; --",
  "' OR '1'='1",
  "' OR 1=1 --",
  '" OR ""="',
  "1; select pg_sleep(3); --",
  "') union select id, secret_hash from api_keys --",
  "%",
  "_",
  "%_%",
  "\\",
  "\\%",
  '{"$gt":""}',
  '{"$ne":null}',
  '{"$where":"sleep(1000)"}',
  "[object Object]",
  "*",
  "$1",
  "?",
];

describe("SQL and JSON injection strings in every text field and filter", () => {
  let victim: TenantFixture;
  let attacker: TenantFixture;
  let victimBefore: Record<string, string>;

  beforeAll(async () => {
    victim = await populateTenant(api, await createTestOrganization(api), "test", "victim");
    attacker = await populateTenant(api, await createTestOrganization(api), "test", "attacker");
    victimBefore = await tenantDigest(api.client.sql, [victim.org.id]);
  }, 60_000);

  function expectHandled(response: ApiResponse, what: string) {
    expect(response.status, `${what}: ${JSON.stringify(response.body)}`).toBeLessThan(500);
    if (response.status >= 400)
      expect(response.body.error.request_id).toBe(response.headers.get("x-parley-request-id"));
  }

  it("stores every injection string as plain text in every text field, and reads it back unchanged", async () => {
    const { client } = attacker;
    for (const [index, text] of INJECTIONS.entries()) {
      const contact = await client.post("/contacts", {
        body: {
          name: `inj ${text}`,
          first_name: text,
          last_name: text,
          phone: `+44 ${text}`.padEnd(8, "0").slice(0, 32),
          external_id: `inj-${index}-${text}`,
          custom_fields: { [attacker.customFieldKey]: text },
          metadata: { [text]: text, nested: { [text]: [text] } },
        },
      });
      expect(contact.status, JSON.stringify(contact.body)).toBe(201);
      expect(contact.body.name).toBe(`inj ${text}`);
      expect(contact.body.metadata[text]).toBe(text);
      const conversation = await client.post("/conversations", {
        body: { contact_id: contact.body.id, external_id: `conv-${index}-${text}`, metadata: { [text]: text } },
      });
      expect(conversation.status).toBe(201);
      const note = await client.post(`/conversations/${conversation.body.id}/notes`, { body: { body: text } });
      expect(note.body.body).toBe(text);
      const message = await client.post("/messages", {
        body: { conversation_id: conversation.body.id, type: "text", text, metadata: { [text]: text } },
      });
      expect(message.body.text).toBe(text);
      const tag = await client.post("/tags", { body: { name: `t${index} ${text}`.slice(0, 50) } });
      expect(tag.status, JSON.stringify(tag.body)).toBe(201);
      const team = await client.post("/teams", { body: { name: `team ${text}` } });
      expect(team.body.name).toBe(`team ${text}`);
      const field = await client.post("/custom-fields", {
        body: { name: `f${index} ${text}`, scope: "organization", value: text },
      });
      expect(field.status, JSON.stringify(field.body)).toBe(201);
      expect(field.body.value).toBe(text);
      const hook = await client.post("/webhooks", {
        body: { url: "http://127.0.0.1:9/inj", events: ["*"], description: text },
      });
      expect(hook.body.description).toBe(text);
      // An environment holds 16 endpoints at most: this one has been read back, it can go.
      expect((await client.delete(`/webhooks/${hook.body.id}`)).status).toBe(200);
      const patched = await client.patch(`/contacts/${contact.body.id}`, { body: { last_name: `${text}!` } });
      expect(patched.body.last_name).toBe(`${text}!`);
    }
    // The tables are still there, with the victim's rows untouched.
    expect(digestChanges(victimBefore, await tenantDigest(api.client.sql, [victim.org.id]))).toEqual([]);
  });

  it("matches every filter literally: no wildcard, no operator, no other tenant's rows", async () => {
    const { client } = attacker;
    const victimIds = new Set(Object.values(victim.ids).flat());
    const contactFilters = ["query", "email", "phone", "external_id"] as const;
    for (const text of [...INJECTIONS, victim.contactEmail, victim.contactPhone, victim.contactExternalId]) {
      for (const filter of contactFilters) {
        const response = await client.get("/contacts", { query: { [filter]: text, limit: 100 } });
        expectHandled(response, `contacts ${filter}=${text}`);
        if (response.status !== 200) continue;
        for (const contact of response.body.data) {
          expect(victimIds.has(contact.id)).toBe(false);
          if (filter === "query") {
            const haystack = [contact.name, contact.email, contact.phone, contact.external_id].join("\n").toLowerCase();
            expect(haystack, `query=${text} matched ${contact.id}`).toContain(text.toLowerCase());
          } else {
            const value = filter === "email" ? contact.email?.toLowerCase() : contact[filter];
            expect(value, `${filter}=${text}`).toBe(filter === "email" ? text.toLowerCase() : text);
          }
        }
      }
      const conversations = await client.get("/conversations", { query: { external_id: text, limit: 100 } });
      expectHandled(conversations, `conversations external_id=${text}`);
      for (const conversation of conversations.body.data ?? []) {
        expect(victimIds.has(conversation.id)).toBe(false);
        expect(conversation.external_id).toBe(text);
      }
    }
    // The wildcards of LIKE are literal: `%` finds only names holding a `%`.
    const percent = await client.get("/contacts", { query: { query: "%", limit: 100 } });
    expect(percent.body.data.length).toBeGreaterThan(0);
    for (const contact of percent.body.data) expect(JSON.stringify([contact.name, contact.external_id])).toContain("%");
    const underscore = await client.get("/contacts", { query: { query: "_", limit: 100 } });
    for (const contact of underscore.body.data) {
      expect([contact.name, contact.email, contact.phone, contact.external_id].join("")).toContain("_");
    }
    // The injection found exactly the contact that holds it, and nothing else.
    const dropped = await client.get("/contacts", { query: { query: "drop table contacts", limit: 100 } });
    expect(dropped.body.data.map((contact: { name: string }) => contact.name)).toEqual([
      "inj '; drop table contacts; --",
    ]);
    const byExternalId = await client.get("/conversations", { query: { external_id: "conv-1-' OR '1'='1" } });
    expect(byExternalId.body.data).toHaveLength(1);
  });

  it("refuses operator-shaped query parameters and ids instead of interpreting them", async () => {
    const { client } = attacker;
    for (const raw of [
      "email[$ne]=x",
      "email[]=a&email[]=b",
      "query[$gt]=",
      "tag_id[$in]=x",
      "__proto__[limit]=1",
      "limit[$gt]=0",
    ]) {
      const response = await call(api, "GET", `/contacts?${raw}`, { key: attacker.key });
      expectError(response, 422, "validation_error");
    }
    for (const id of ["' OR '1'='1", "tag_' OR 1=1 --", '{"$gt":""}']) {
      expectError(await client.get("/contacts", { query: { tag_id: id } }), 422, "validation_error", "tag_id");
      expectError(
        await client.get("/conversations", { query: { contact_id: id } }),
        422,
        "validation_error",
        "contact_id",
      );
      expectError(await client.get(`/contacts/${encodeURIComponent(id)}`), 404, "resource_not_found");
    }
    const objectBody = await client.post("/contacts", { body: { email: { $gt: "" } } });
    expectError(objectBody, 422, "validation_error", "email");
    const arrayId = await client.post("/conversations", { body: { contact_id: [victim.ids.contact[0]] } });
    expectError(arrayId, 422, "validation_error", "contact_id");
    expect(digestChanges(victimBefore, await tenantDigest(api.client.sql, [victim.org.id]))).toEqual([]);
  });

  it("keeps pg_sleep-shaped input from sleeping: every filter answers promptly", async () => {
    const started = Date.now();
    for (const filter of ["query", "email", "phone", "external_id"]) {
      await attacker.client.get("/contacts", { query: { [filter]: "1; select pg_sleep(3); --" } });
    }
    expect(Date.now() - started).toBeLessThan(2_500);
  });
});
