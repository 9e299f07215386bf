import { appendFileSync } from "node:fs";
import { errorsOf, type Operation, operations } from "@parley/schema";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../src/organizations/api-keys.js";
import { makePdf } from "../files.js";
import { as, createTestOrganization, type TestApi, useTestApi } from "../harness.js";
import {
  arbitraryOf,
  encodeComponent,
  hostileString,
  hostileValue,
  mutatedObject,
  RAW_SEGMENTS,
  type SchemaContext,
  toJson,
} from "./arbitraries.js";
import { populateTenant, type Resource, resourcePrefixes, type TenantFixture, tinyPng } from "./fixtures.js";
import {
  describeRequest,
  digestChanges,
  envelopeProblem,
  RawClient,
  type RawRequest,
  type RawResponse,
  tenantDigest,
} from "./support.js";

/**
 * Every operation of the catalogue, fuzzed: requests generated from its schemas with
 * fast-check, then pushed beyond them (wrong types, unknown fields, huge and invalid text,
 * injection strings, ids of every shape, broken bodies, wrong keys). Whatever comes in:
 * never a 5xx, every error is the documented error body with a code of the catalogue, and
 * a batch of requests that were all refused changes no row of any tenant involved.
 *
 * FUZZ_SEED=<n> replays a run (each test derives its own seed from it); FUZZ_SCALE=<x>
 * multiplies the number of requests; FUZZ_DUMP=<file> appends every batch in which a
 * request got no answer, bodies in base64, for replaying it by hand.
 */

const api: TestApi = useTestApi({
  RATE_LIMIT_PER_MINUTE: "100000000",
  META_WEBHOOK_RATE_LIMIT_PER_MINUTE: "100000000",
});

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
/** Requests in flight at once; also the size of a batch between two digests. */
const CONCURRENCY = 8;
const MIN_REQUESTS = 10_000;

type AuthKind = "test" | "live" | "none" | "garbage" | "noscope" | "foreign";

interface Generated {
  request: RawRequest;
  auth: AuthKind;
  /** The request reaches the operation's own route (method and path shape unchanged). */
  intact: boolean;
}

interface Stats {
  requests: number;
  byOperation: Map<string, number>;
  statuses: Map<number, number>;
  refusedBatches: number;
  mixedBatches: number;
  verifiedRefusedWrites: number;
  verifiedRefusedPastAuth: number;
  undocumented: Map<string, Set<string>>;
  digestMs: number;
  slowest: { ms: number; label: string; status: number | string; request: string }[];
}

const stats: Stats = {
  requests: 0,
  byOperation: new Map(),
  statuses: new Map(),
  refusedBatches: 0,
  mixedBatches: 0,
  verifiedRefusedWrites: 0,
  verifiedRefusedPastAuth: 0,
  undocumented: new Map(),
  digestMs: 0,
  slowest: [],
};

function noteDuration(ms: number, label: string, status: number | string, request: RawRequest) {
  if (stats.slowest.length >= 10 && ms <= (stats.slowest[stats.slowest.length - 1]?.ms ?? 0)) return;
  stats.slowest.push({ ms, label, status, request: describeRequest(request).slice(0, 160) });
  stats.slowest.sort((a, b) => b.ms - a.ms);
  stats.slowest.length = Math.min(stats.slowest.length, 10);
}

async function digest() {
  const at = Date.now();
  const result = await tenantDigest(api.client.sql, orgIds);
  stats.digestMs += Date.now() - at;
  return result;
}
const started = Date.now();

let client: RawClient;
let main: TenantFixture;
let mainLive: TenantFixture;
let foreign: TenantFixture;
let orgIds: string[];
const keys: Record<Exclude<AuthKind, "none" | "garbage">, string> = { test: "", live: "", noscope: "", foreign: "" };
/** Resources made to be deleted, so the delete operations can succeed without losing the fixtures. */
const disposable: Record<string, string[]> = { cnt: [], tag: [], wh: [] };
/** A `next_cursor` of each list, by operation id. */
const cursors = new Map<string, string>();
let webchatChannelId = "";
let visitorToken = "";

function idsOf(fixture: TenantFixture, prefix: string): string[] {
  const resource = (Object.entries(resourcePrefixes).find(([, value]) => value === prefix)?.[0] ?? "") as Resource;
  return fixture.ids[resource] ?? [];
}

function lowerId(id: string): string {
  const at = id.indexOf("_");
  return id.slice(0, at + 1) + id.slice(at + 1).toLowerCase();
}

beforeAll(async () => {
  const mainOrg = await createTestOrganization(api, "Fuzz target");
  const foreignOrg = await createTestOrganization(api, "Fuzz bystander");
  main = await populateTenant(api, mainOrg, "test", "main");
  mainLive = await populateTenant(api, mainOrg, "live", "mainlive");
  foreign = await populateTenant(api, foreignOrg, "test", "foreign");
  orgIds = [mainOrg.id, foreignOrg.id];
  keys.test = mainOrg.test;
  keys.live = mainOrg.live;
  keys.foreign = foreignOrg.test;
  keys.noscope = (
    await createApiKey(api.context.db, { organizationId: mainOrg.id, environment: "test", scopes: [] })
  ).key;
  const owner = as(api, mainOrg.test);
  for (let index = 0; index < 6; index++) {
    disposable.cnt?.push((await owner.post("/contacts", { body: { name: `Disposable ${index}` } })).body.id);
    disposable.tag?.push((await owner.post("/tags", { body: { name: `disposable-${index}` } })).body.id);
    const hook = await owner.post("/webhooks", { body: { url: "http://127.0.0.1:9/gone", events: ["*"] } });
    disposable.wh?.push(hook.body.id);
  }
  for (const operation of operations) {
    if (operation.method !== "get" || !operation.query?.shape.after) continue;
    const path = operation.path.replace(/\{(\w+)\}/g, (_, name: string) => firstIdFor(name));
    const page = await owner.get(path, { query: { limit: 1 } });
    if (page.body?.pagination?.next_cursor) cursors.set(operation.id, page.body.pagination.next_cursor);
  }
  const channels = await owner.get("/channels", { query: { type: "webchat" } });
  webchatChannelId = channels.body.data[0].id;
  const session = await fetch(`${api.baseUrl}/webchat/channels/${webchatChannelId}/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "Visitor" }),
  });
  visitorToken = ((await session.json()) as { token: string }).token;
  client = new RawClient(api.baseUrl.replace(/\/v1$/, ""), CONCURRENCY);
}, 120_000);

afterAll(() => {
  client?.close();
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const undocumented = [...stats.undocumented].map(([op, codes]) => `${op}: ${[...codes].join(", ")}`);
  console.log(
    [
      `fuzz: ${stats.requests} requests in ${seconds} s (seed ${SEED})`,
      `statuses: ${JSON.stringify(Object.fromEntries([...stats.statuses].sort(([a], [b]) => a - b)))}`,
      `all-refused write batches: ${stats.refusedBatches} (${stats.verifiedRefusedWrites} writes verified unchanged, ${stats.verifiedRefusedPastAuth} of them past authentication); mixed batches: ${stats.mixedBatches}`,
      `time spent digesting tenants: ${(stats.digestMs / 1000).toFixed(1)} s`,
      `slowest requests:\n  ${stats.slowest.map((slow) => `${slow.ms} ms ${slow.label} ${slow.status} ${slow.request}`).join("\n  ")}`,
      `codes answered but not listed in the operation's errors:${undocumented.length ? `\n  ${undocumented.join("\n  ")}` : " none"}`,
    ].join("\n"),
  );
});

function firstIdFor(param: string): string {
  const prefix = prefixOfParam(param);
  return idsOf(main, prefix)[0] ?? "unknown";
}

function prefixOfParam(param: string): string {
  if (param === "webhook_id") return "wh";
  if (param === "delivery_id") return "whd";
  return resourcePrefixes[param.replace(/_id$/, "") as Resource] ?? "unknown";
}

// ---------------------------------------------------------------- ids

const idShapes = fc.oneof(
  fc.stringMatching(/^[a-z]{2,5}_[0-9A-HJKMNP-TV-Z]{26}$/),
  fc.stringMatching(/^[a-z]{3,4}_[0-9A-Za-z]{20,40}$/),
  fc.stringMatching(/^[0-9A-HJKMNP-TV-Z]{26}$/),
  fc.constantFrom("cnt_", "_", "cnt", "CNT_01ARZ3NDEKTSV4RRFFQ69G5FAV", "cnt_01arz3ndektsv4rrffq69g5fa"),
  fc.constantFrom("x".repeat(300), "cnt_".repeat(500), "9".repeat(4000)),
);

/** Ids for a prefix in a body or query: the fixtures' own, other tenants', other shapes. */
function idArbitrary(prefix: string, forDelete = false): fc.Arbitrary<string> {
  const own = forDelete && disposable[prefix]?.length ? (disposable[prefix] ?? []) : idsOf(main, prefix);
  const others = [...idsOf(foreign, prefix), ...idsOf(mainLive, prefix)];
  const choices: fc.WeightedArbitrary<string>[] = [
    { weight: 2, arbitrary: fc.stringMatching(new RegExp(`^${prefix}_[0-9A-HJKMNP-TV-Z]{26}$`)) },
  ];
  if (own.length > 0) {
    choices.push({ weight: 8, arbitrary: fc.constantFrom(...own) });
    choices.push({ weight: 1, arbitrary: fc.constantFrom(...own).map(lowerId) });
  }
  if (others.length > 0) choices.push({ weight: 3, arbitrary: fc.constantFrom(...others) });
  return fc.oneof(...choices);
}

const allOwnIds = () => Object.values(main.ids).flat();

interface Segment {
  text: string;
  intact: boolean;
}

/** Longer paths only meet node's header limit (431, see limits.test.ts), not the API. */
const MAX_SEGMENT = 1500;

function decodable(text: string): boolean {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

/** A path parameter: a real id most of the time, else another tenant's, another type's, or garbage. */
function segmentArbitrary(param: string, operation: Operation): fc.Arbitrary<Segment> {
  const prefix = prefixOfParam(param);
  const real = idArbitrary(prefix, operation.method === "delete").map((id) => ({
    text: encodeComponent(id),
    intact: true,
  }));
  return fc.oneof(
    { weight: 14, arbitrary: real },
    {
      weight: 2,
      arbitrary: fc.constantFrom(...allOwnIds()).map((id) => ({ text: encodeComponent(id), intact: true })),
    },
    {
      weight: 3,
      arbitrary: fc
        .oneof(hostileString, idShapes)
        .map(encodeComponent)
        .filter((text) => text.length > 0 && text.length <= MAX_SEGMENT)
        // An id the router cannot even decode is refused while routing, before the scope check.
        .map((text) => ({ text, intact: decodable(text) })),
    },
    { weight: 2, arbitrary: fc.constantFrom(...RAW_SEGMENTS).map((text) => ({ text, intact: decodable(text) })) },
    { weight: 1, arbitrary: fc.constant({ text: "", intact: false }) },
  );
}

// ---------------------------------------------------------------- schema context

const LOCAL_URLS = [
  "http://127.0.0.1:9/hook",
  "http://127.0.0.1:9/a/b?c=d&e=%00#frag",
  "http://[::1]:9/",
  "https://127.0.0.1:9/secure",
  "http://localhost:9/x",
];

function schemaContext(operation: Operation): SchemaContext {
  return {
    idOf: (prefix) => idArbitrary(prefix),
    field: (name) => {
      if (name === "url" && operation.id.startsWith("webhooks.")) return fc.constantFrom(...LOCAL_URLS);
      if (name === "custom_fields") {
        return fc.dictionary(
          fc.constantFrom("plan", "region", "unknown_key", main.customFieldKey),
          fc.oneof({ weight: 5, arbitrary: fc.string({ maxLength: 40 }) }, { weight: 1, arbitrary: fc.constant(null) }),
          { maxKeys: 3 },
        );
      }
      if (name === "after") {
        const own = cursors.get(operation.id);
        const any = [...cursors.values()];
        return fc.oneof(
          ...(own ? [{ weight: 3, arbitrary: fc.constant(own) }] : []),
          ...(any.length ? [{ weight: 2, arbitrary: fc.constantFrom(...any) }] : []),
          { weight: 2, arbitrary: hostileString },
          {
            weight: 2,
            arbitrary: fc
              .tuple(fc.constantFrom(...(any.length ? any : ["a.b"])), fc.nat({ max: 90 }))
              .map(([cursor, cut]) => cursor.slice(0, cut)),
          },
        );
      }
      return undefined;
    },
  };
}

// ---------------------------------------------------------------- requests

const JSON_TYPES = [
  "application/json",
  "application/json; charset=utf-8",
  "APPLICATION/JSON",
  "application/json; charset=utf-16",
  "application/json; charset=latin1",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/merge-patch+json",
  "",
];

const INVALID_JSON = [
  "{",
  '{"name":',
  "{'name':'x'}",
  '{"name":"x",}',
  "{} {}",
  "\ufeff{}",
  '{"a":1}\u0000',
  "[",
  "nul\u0000",
  '{"name":"\\ud800"}',
  '{"name":"\\u00"}',
  '{"a":NaN}',
  '{"a":Infinity}',
  '{"a":01}',
  '{"__proto__":{"polluted":true}}',
  '{"name":"a","name":"b"}',
  "x".repeat(1024 * 1024 + 10),
];

const bodyHeaders = fc.record({
  contentType: fc.oneof(
    { weight: 12, arbitrary: fc.constant("application/json") },
    { weight: 3, arbitrary: fc.constantFrom(...JSON_TYPES) },
  ),
  encoding: fc.oneof(
    { weight: 20, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constantFrom("gzip", "deflate", "br", "identity", "x-unknown", "gzip, gzip") },
  ),
  chunked: fc.oneof({ weight: 12, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
});

/** The body of a JSON operation: valid, mutated, not an object, or not JSON at all. */
function bodyArbitrary(operation: Operation): fc.Arbitrary<{ bytes: string | Buffer; hostile: boolean } | undefined> {
  if (!operation.body) {
    return fc.oneof(
      { weight: 12, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: hostileValue.map((value) => ({ bytes: toJson({ value }), hostile: true })) },
      { weight: 1, arbitrary: fc.constantFrom(...INVALID_JSON).map((bytes) => ({ bytes, hostile: true })) },
    );
  }
  const context = schemaContext(operation);
  const valid = arbitraryOf(operation.body, context);
  const fields = Object.keys(operation.body.shape);
  const json = toJson;
  return fc.oneof(
    { weight: 5, arbitrary: valid.map((value) => ({ bytes: json(value), hostile: false })) },
    { weight: 7, arbitrary: mutatedObject(valid, fields).map((value) => ({ bytes: json(value), hostile: true })) },
    {
      weight: 1,
      arbitrary: fc
        .oneof(
          hostileValue,
          valid.map((value) => [value]),
        )
        .filter((value) => typeof value !== "object" || value === null || Array.isArray(value))
        .map((value) => ({ bytes: json(value), hostile: true })),
    },
    { weight: 1, arbitrary: fc.constantFrom(...INVALID_JSON).map((bytes) => ({ bytes, hostile: true })) },
    {
      weight: 1,
      arbitrary: fc.uint8Array({ maxLength: 200 }).map((bytes) => ({ bytes: Buffer.from(bytes), hostile: true })),
    },
  );
}

const RAW_QUERIES = [
  "limit=1&limit=2",
  "after=",
  "after=%00",
  "limit=%ZZ",
  "a[b]=c",
  "email[$ne]=x",
  "query[]=x",
  "&&=&",
  "%=%",
  "limit",
  "query=%F0%9F",
  "query=%ED%A0%80",
  "limit=-0",
  "limit=1e2",
  "limit=0x10",
  "limit=%201%20",
  "limit=100.0",
  "limit=9007199254740993",
  "__proto__[limit]=1",
  `after=${"A".repeat(81)}`,
  `query=${"a".repeat(5000)}`,
];

/** Longer query strings only meet node's header limit (431, see limits.test.ts): cut, even mid-escape. */
const MAX_QUERY = 6000;

function serializeQuery(entries: [string, string][]): string {
  const text = entries.map(([name, value]) => `${encodeComponent(name)}=${encodeComponent(value)}`).join("&");
  return text.length > MAX_QUERY ? text.slice(0, MAX_QUERY) : text;
}

function asQueryEntries(value: unknown): [string, string][] {
  if (typeof value !== "object" || value === null) return [["value", String(value)]];
  return Object.entries(value as Record<string, unknown>).flatMap(([name, item]): [string, string][] => {
    if (item === undefined) return [];
    if (Array.isArray(item)) return item.map((each) => [name, typeof each === "string" ? each : toJson(each)]);
    return [[name, typeof item === "string" ? item : toJson(item)]];
  });
}

/** The query string (without `?`): from the schema, mutated, duplicated keys, or raw garbage. */
function queryArbitrary(operation: Operation): fc.Arbitrary<{ text: string; hostile: boolean }> {
  if (!operation.query) {
    return fc.oneof(
      { weight: 10, arbitrary: fc.constant({ text: "", hostile: false }) },
      { weight: 1, arbitrary: fc.constantFrom(...RAW_QUERIES).map((text) => ({ text, hostile: true })) },
    );
  }
  const context = schemaContext(operation);
  const valid = arbitraryOf(operation.query, context);
  const fields = Object.keys(operation.query.shape);
  return fc.oneof(
    { weight: 5, arbitrary: valid.map((value) => ({ text: serializeQuery(asQueryEntries(value)), hostile: false })) },
    {
      weight: 5,
      arbitrary: mutatedObject(valid, fields).map((value) => ({
        text: serializeQuery(asQueryEntries(value)),
        hostile: true,
      })),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(valid, fc.constantFrom(...fields), fc.array(hostileString, { minLength: 1, maxLength: 3 }))
        .map(([value, field, extra]) => ({
          text: serializeQuery([...asQueryEntries(value), ...extra.map((item): [string, string] => [field, item])]),
          hostile: true,
        })),
    },
    { weight: 2, arbitrary: fc.constantFrom(...RAW_QUERIES).map((text) => ({ text, hostile: true })) },
  );
}

const garbageAuthorization = fc.oneof(
  fc.constantFrom(
    "Bearer",
    "Bearer ",
    "Basic dXNlcjpwYXNz",
    "Bearer parley_test_",
    "Bearer parley_live_short",
    "Bearer parley_test_00000000000000000000000000000000000000",
    "bearer parley_prod_abcdefghijklmnopqrstuvwxyz0123456789",
    "Bearer ' OR '1'='1",
    'Bearer {"$gt":""}',
    "Bearer ../../etc/passwd",
    `Bearer ${"a".repeat(8000)}`,
  ),
  fc.string({ unit: "grapheme-ascii", maxLength: 60 }).map((text) => `Bearer ${text}`),
);

const authArbitrary = fc.oneof(
  { weight: 24, arbitrary: fc.constant<AuthKind>("test") },
  { weight: 2, arbitrary: fc.constant<AuthKind>("live") },
  { weight: 1, arbitrary: fc.constant<AuthKind>("none") },
  { weight: 1, arbitrary: fc.constant<AuthKind>("garbage") },
  { weight: 1, arbitrary: fc.constant<AuthKind>("noscope") },
  { weight: 1, arbitrary: fc.constant<AuthKind>("foreign") },
);

const otherMethods = fc.constantFrom("GET", "POST", "PATCH", "DELETE", "PUT", "OPTIONS", "HEAD");

const extraHeaders = fc.record(
  {
    idempotency: fc.oneof(
      fc.uuid(),
      fc.constantFrom("fuzz-reused-key", "", "k".repeat(256), "é", "' OR 1=1 --"),
      fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 40 }),
    ),
    forwardedFor: fc.constantFrom("127.0.0.1", "' OR 1=1", "::1, 10.0.0.1", "x".repeat(2000)),
    accept: fc.constantFrom("*/*", "text/html", "application/xml", "application/json;q=0", ""),
  },
  { requiredKeys: [] },
);

function authorizationFor(auth: AuthKind, garbage: string): Record<string, string> {
  if (auth === "none") return {};
  if (auth === "garbage") return { authorization: garbage };
  return { authorization: `Bearer ${keys[auth]}` };
}

/** Requests for a JSON operation of the catalogue. */
function requestArbitrary(operation: Operation): fc.Arbitrary<Generated> {
  const paramNames = [...operation.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string);
  const segments = fc.tuple(...paramNames.map((name) => segmentArbitrary(name, operation)));
  const body =
    operation.requestContentType === "multipart/form-data"
      ? uploadBodyArbitrary
      : operation.requestContentType === "message/rfc822"
        ? emailBodyArbitrary
        : bodyArbitrary(operation).map((value) =>
            value ? { ...value, headers: {} as Record<string, string> } : undefined,
          );
  return fc
    .record({
      auth: authArbitrary,
      garbage: garbageAuthorization,
      segments: paramNames.length > 0 ? segments : fc.constant([] as Segment[]),
      query: queryArbitrary(operation),
      body,
      bodyHeaders,
      method: fc.oneof(
        { weight: 24, arbitrary: fc.constant(operation.method.toUpperCase()) },
        { weight: 1, arbitrary: otherMethods },
      ),
      extra: extraHeaders,
    })
    .map(({ auth, garbage, segments, query, body, bodyHeaders, method, extra }) => {
      let index = 0;
      const path = operation.path.replace(/\{(\w+)\}/g, () => (segments[index++] as Segment).text);
      const headers: Record<string, string> = { ...authorizationFor(auth, garbage) };
      if (extra.idempotency !== undefined) headers["idempotency-key"] = extra.idempotency;
      if (extra.forwardedFor !== undefined) headers["x-forwarded-for"] = extra.forwardedFor;
      if (extra.accept !== undefined) headers.accept = extra.accept;
      if (body) {
        const own = "headers" in body ? body.headers : {};
        if (Object.keys(own).length > 0) Object.assign(headers, own);
        else if (bodyHeaders.contentType) headers["content-type"] = bodyHeaders.contentType;
        if (bodyHeaders.encoding) headers["content-encoding"] = bodyHeaders.encoding;
        if (bodyHeaders.chunked) headers["transfer-encoding"] = "chunked";
      }
      const request: RawRequest = {
        method,
        path: `/v1${path}${query.text ? `?${query.text}` : ""}`,
        headers,
        ...(body ? { body: body.bytes } : {}),
      };
      const intact = method === operation.method.toUpperCase() && segments.every((segment) => segment.intact);
      return { request, auth, intact };
    });
}

// ---------------------------------------------------------------- uploads (multipart)

const BOUNDARY = "fuzzBoundary7MA4YWxk";

interface Part {
  field: string;
  filename: string | undefined;
  mode: "plain" | "star" | "both" | "none";
  type: string | undefined;
  content: Buffer;
}

let pngBytes: Buffer = Buffer.alloc(0);
const contents = () =>
  fc.oneof(
    fc.constant(makePdf("fuzz")),
    fc.constant(pngBytes),
    fc.constant(Buffer.from("plain text\n")),
    fc.constant(pngBytes.subarray(0, 20)),
    fc.constant(Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(64, 0x41)])),
    fc.constant(Buffer.from("GIF89a\u0001\u0000\u0001\u0000")),
    fc.constant(Buffer.alloc(0)),
    fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
  );

const partArbitrary = fc.record({
  field: fc.oneof(
    { weight: 8, arbitrary: fc.constant("file") },
    { weight: 2, arbitrary: fc.constantFrom("files", "File", "file[]", "", 'fi"le', "fil\u0000e", "file\r\nX: 1") },
  ),
  filename: fc.option(
    fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom("invoice.pdf", "dot.png", "notes.txt", "photo.JPG", "a.exe", "noext") },
      { weight: 2, arbitrary: hostileString },
    ),
    { nil: undefined },
  ),
  mode: fc.constantFrom<Part["mode"]>("plain", "plain", "star", "both", "none"),
  type: fc.option(
    fc.oneof(
      {
        weight: 4,
        arbitrary: fc.constantFrom(
          "application/pdf",
          "image/png",
          "image/jpeg",
          "image/webp",
          "text/plain",
          "application/octet-stream",
        ),
      },
      {
        weight: 2,
        arbitrary: fc.constantFrom(
          "image/gif",
          "text/html",
          "image/svg+xml",
          "application/pdf; charset=x",
          "IMAGE/PNG",
          "image/png\r\nX-Injected: 1",
        ),
      },
      { weight: 1, arbitrary: hostileString },
    ),
    { nil: undefined },
  ),
  content: contents(),
});

function partBytes(part: Part, eol: string): Buffer {
  let disposition = `form-data; name="${part.field}"`;
  if (part.filename !== undefined && (part.mode === "plain" || part.mode === "both")) {
    disposition += `; filename="${part.filename}"`;
  }
  if (part.filename !== undefined && (part.mode === "star" || part.mode === "both")) {
    disposition += `; filename*=UTF-8''${encodeComponent(part.filename)}`;
  }
  const head = `Content-Disposition: ${disposition}${eol}${part.type !== undefined ? `Content-Type: ${part.type}${eol}` : ""}${eol}`;
  return Buffer.concat([Buffer.from(head, "utf8"), part.content]);
}

const uploadBodyArbitrary = fc
  .record({
    parts: fc.array(partArbitrary, { minLength: 0, maxLength: 3 }),
    boundary: fc.oneof(
      { weight: 10, arbitrary: fc.constant(BOUNDARY) },
      { weight: 1, arbitrary: fc.constantFrom("x".repeat(71), "a b", "é", "-", `"${BOUNDARY}"`) },
    ),
    contentType: fc.oneof(
      { weight: 10, arbitrary: fc.constant("ok") },
      {
        weight: 3,
        arbitrary: fc.constantFrom("no-boundary", "other-boundary", "json", "none", "quoted", "upper", "mixed"),
      },
    ),
    eol: fc.oneof({ weight: 6, arbitrary: fc.constant("\r\n") }, { weight: 1, arbitrary: fc.constant("\n") }),
    closing: fc.oneof({ weight: 6, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
    truncate: fc.option(fc.nat({ max: 2000 }), { nil: undefined, freq: 5 }),
    preamble: fc.oneof({ weight: 6, arbitrary: fc.constant("") }, { weight: 1, arbitrary: hostileString }),
  })
  .map(({ parts, boundary, contentType, eol, closing, truncate, preamble }) => {
    const bare = boundary.replace(/^"|"$/g, "");
    const pieces: Buffer[] = [Buffer.from(preamble ? `${preamble}${eol}` : "", "utf8")];
    for (const part of parts) pieces.push(Buffer.from(`--${bare}${eol}`), partBytes(part, eol), Buffer.from(eol));
    if (closing) pieces.push(Buffer.from(`--${bare}--${eol}`));
    let bytes = Buffer.concat(pieces);
    if (truncate !== undefined) bytes = bytes.subarray(0, Math.min(truncate, bytes.length));
    const types: Record<string, string | undefined> = {
      ok: `multipart/form-data; boundary=${boundary}`,
      "no-boundary": "multipart/form-data",
      "other-boundary": "multipart/form-data; boundary=somethingElse",
      json: "application/json",
      none: undefined,
      quoted: `multipart/form-data; boundary="${bare}"`,
      upper: `MULTIPART/FORM-DATA; BOUNDARY=${boundary}`,
      mixed: `multipart/mixed; boundary=${boundary}`,
    };
    const type = types[contentType];
    return { bytes, hostile: true, headers: type === undefined ? {} : { "content-type": type } };
  });

// ---------------------------------------------------------------- inbound email (message/rfc822)

const emailBodyArbitrary = fc
  .record({
    from: fc.oneof(fc.emailAddress(), hostileString, fc.constant("Ada <ada@example.com>")),
    subject: fc.oneof(fc.string({ maxLength: 60 }), hostileString, fc.constant("=?UTF-8?B?4pyTIGJhZA==?=")),
    messageId: fc.oneof(
      fc.uuid().map((id) => `<${id}@fuzz.example>`),
      fc.constant("<fuzz-duplicate@fuzz.example>"),
      hostileString,
    ),
    inReplyTo: fc.option(fc.oneof(fc.constant("<fuzz-duplicate@fuzz.example>"), hostileString), { nil: undefined }),
    date: fc.oneof(fc.constant("Sat, 21 Nov 2026 10:00:00 +0000"), hostileString),
    contentType: fc.constantFrom(
      "text/plain; charset=utf-8",
      "text/html; charset=utf-8",
      "text/plain; charset=x-unknown",
      "text/plain; charset=utf-7",
      "multipart/mixed; boundary=fuzzb",
      "multipart/alternative; boundary=fuzzb",
      "multipart/mixed",
      "application/pdf",
      "",
    ),
    encoding: fc.constantFrom("", "base64", "quoted-printable", "8bit", "x-weird"),
    text: fc.oneof(fc.string({ maxLength: 200 }), hostileString),
    attachment: fc.option(
      fc.record({
        filename: fc.oneof(fc.constant("a.pdf"), hostileString),
        type: fc.constantFrom("application/pdf", "image/png", "text/plain", "application/x-evil", ""),
        data: fc.oneof(fc.constant(makePdf("mail").toString("base64")), fc.constant("!!!not base64!!!"), hostileString),
      }),
      { nil: undefined },
    ),
    garbage: fc.option(fc.uint8Array({ maxLength: 400 }), { nil: undefined, freq: 8 }),
    httpType: fc.oneof(
      { weight: 10, arbitrary: fc.constant("message/rfc822") },
      { weight: 1, arbitrary: fc.constantFrom("text/plain", "application/json", "message/rfc822; charset=x") },
    ),
  })
  .map((email) => {
    if (email.garbage)
      return { bytes: Buffer.from(email.garbage), hostile: true, headers: { "content-type": email.httpType } };
    const head = [
      `From: ${email.from}`,
      "To: support@example.com",
      `Subject: ${email.subject}`,
      `Message-ID: ${email.messageId}`,
      ...(email.inReplyTo ? [`In-Reply-To: ${email.inReplyTo}`, `References: ${email.inReplyTo}`] : []),
      `Date: ${email.date}`,
      "MIME-Version: 1.0",
      ...(email.contentType ? [`Content-Type: ${email.contentType}`] : []),
      ...(email.encoding ? [`Content-Transfer-Encoding: ${email.encoding}`] : []),
    ].join("\r\n");
    let body = email.text;
    if (email.contentType.startsWith("multipart/") && email.attachment) {
      body = [
        "--fuzzb",
        "Content-Type: text/plain; charset=utf-8",
        "",
        email.text,
        "--fuzzb",
        `Content-Type: ${email.attachment.type}; name="${email.attachment.filename}"`,
        `Content-Disposition: attachment; filename="${email.attachment.filename}"`,
        "Content-Transfer-Encoding: base64",
        "",
        email.attachment.data,
        "--fuzzb--",
        "",
      ].join("\r\n");
    }
    return {
      bytes: Buffer.from(`${head}\r\n\r\n${body}`, "utf8"),
      hostile: true,
      headers: { "content-type": email.httpType },
    };
  });

// ---------------------------------------------------------------- checks

const violations: string[] = [];

/** What the catalogue says the operation can answer (its OpenAPI statuses come from the same list). */
function documentedCodes(operation: Operation): Set<string> {
  return new Set<string>(errorsOf(operation));
}

/** The invariants of one answer; returns its problems. */
function checkResponse(operation: Operation | undefined, generated: Generated, response: RawResponse): string[] {
  const problems: string[] = [];
  const { request, auth, intact } = generated;
  if (response.status >= 500) problems.push(`answered ${response.status}: ${response.text.slice(0, 200)}`);
  // Node's own answer to headers above its limit, before the app sees the request (limits.test.ts).
  if (response.status === 431) return problems;
  const hasBody = request.method !== "HEAD";
  if (!response.headers["x-parley-request-id"]) problems.push("no X-Parley-Request-Id");
  if (!response.headers["x-ratelimit-remaining"]) problems.push("no X-RateLimit-Remaining");
  if (response.status >= 400 && hasBody) {
    const problem = envelopeProblem(response);
    if (problem) problems.push(problem);
  }
  const code = response.json?.error?.code as string | undefined;
  if (auth === "none" && !(response.status === 401 && (!hasBody || code === "authentication_required"))) {
    problems.push(`no key: answered ${response.status} ${code ?? ""}, not 401 authentication_required`);
  }
  if (auth === "garbage" && response.status !== 401) problems.push(`bad key: answered ${response.status}, not 401`);
  if (!operation || !intact) return problems;
  // A body that is not JSON, or too large, is refused while it is read: before the scope and test-only checks.
  const unreadable = request.body !== undefined && (code === "invalid_json" || code === "payload_too_large");
  if (auth === "live" && operation.testOnly && response.status !== 404 && !unreadable) {
    problems.push(`test-only route with a live key: answered ${response.status}, not 404`);
  }
  if (auth === "noscope" && operation.scope !== null && response.status !== 403 && !unreadable) {
    problems.push(`key without ${operation.scope}: answered ${response.status}, not 403`);
  }
  // The catalogue lists each operation's errors (the reference and the SDK come from it).
  if (code && (auth === "test" || auth === "live" || auth === "foreign") && !documentedCodes(operation).has(code)) {
    if (!(code === "route_not_found" && operation.testOnly && auth === "live")) {
      const seen = stats.undocumented.get(operation.id) ?? new Set<string>();
      seen.add(code);
      stats.undocumented.set(operation.id, seen);
      problems.push(`answered ${code}, which the catalogue does not list for ${operation.id}`);
    }
  }
  if (response.status < 300 && hasBody) {
    const allowed = operation.findOrCreate ? [operation.status, 200] : [operation.status];
    if (operation.id === "channels.receive_email") allowed.push(200);
    if (!allowed.includes(response.status)) problems.push(`success status ${response.status}, expected ${allowed}`);
    if (!operation.responseContentType) {
      const parsed = operation.response.safeParse(response.json);
      if (!parsed.success)
        problems.push(`2xx body does not match ${operation.responseName}: ${parsed.error.message.slice(0, 300)}`);
    } else {
      const disposition = String(response.headers["content-disposition"] ?? "");
      if (!/^attachment; [\x20-\x7e]*$/.test(disposition)) problems.push(`unsafe Content-Disposition ${disposition}`);
    }
  }
  return problems;
}

const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Sends one batch concurrently. When it holds a write, the tenants are digested before and
 * after; if every request of the batch was refused, nothing may have changed.
 */
/** The digest after the previous batch, when nothing has run since. */
let lastDigest: Record<string, string> | undefined;

async function runBatch(label: string, operation: Operation | undefined, batch: Generated[]) {
  const writes = batch.filter((generated) => !READ_METHODS.has(generated.request.method));
  const before = writes.length > 0 ? (lastDigest ?? (await digest())) : undefined;
  lastDigest = undefined;
  const responses = await Promise.all(
    batch.map(async (generated) => {
      const at = Date.now();
      const response = await client.send(generated.request).catch((error: Error) => ({ error }) as { error: Error });
      noteDuration(Date.now() - at, label, "status" in response ? response.status : "error", generated.request);
      return response;
    }),
  );
  stats.requests += batch.length;
  stats.byOperation.set(label, (stats.byOperation.get(label) ?? 0) + batch.length);
  let allRefused = true;
  responses.forEach((response, index) => {
    const generated = batch[index] as Generated;
    if ("error" in response) {
      allRefused = false;
      if (process.env.FUZZ_DUMP) {
        const dump = batch.map(({ request }) => ({
          ...request,
          body: request.body === undefined ? undefined : Buffer.from(request.body).toString("base64"),
          failed: request === generated.request,
        }));
        appendFileSync(process.env.FUZZ_DUMP, `${JSON.stringify(dump)}\n`);
      }
      violations.push(`${label}: no answer (${response.error.message}) to ${describeRequest(generated.request)}`);
      return;
    }
    stats.statuses.set(response.status, (stats.statuses.get(response.status) ?? 0) + 1);
    if (response.status < 400) allRefused = false;
    for (const problem of checkResponse(operation, generated, response)) {
      violations.push(`${label}: ${problem}\n    request: ${describeRequest(generated.request)}`);
    }
  });
  if (!before) return;
  const after = await digest();
  lastDigest = after;
  if (!allRefused) {
    stats.mixedBatches++;
    return;
  }
  stats.refusedBatches++;
  stats.verifiedRefusedWrites += writes.length;
  stats.verifiedRefusedPastAuth += writes.filter((_, index) => {
    const response = responses[batch.indexOf(writes[index] as Generated)] as RawResponse;
    return response.status !== 401 && response.status !== 403;
  }).length;
  const changed = digestChanges(before, after);
  if (changed.length > 0) {
    const statuses = responses.map((response) => ("status" in response ? response.status : "x")).join(",");
    violations.push(
      `${label}: a batch of refused requests (${statuses}) changed ${changed.join(", ")}\n    ${writes
        .map((generated) => describeRequest(generated.request))
        .join("\n    ")}`,
    );
  }
}

function expectNoViolations(label: string, from: number) {
  const mine = violations.slice(from);
  const shown = mine.slice(0, 15).join("\n");
  expect(mine, `${mine.length} violations in ${label} (FUZZ_SEED=${SEED}):\n${shown}`).toEqual([]);
}

/** A seed per label, derived from the run's seed: one label's runs do not depend on another's. */
function seedFor(label: string): number {
  let hash = SEED | 0;
  for (const char of label) hash = (Math.imul(hash, 31) + char.charCodeAt(0)) | 0;
  return hash;
}

/** Runs `runs` batches of `CONCURRENCY` requests drawn from `arbitrary`. */
async function fuzz(
  label: string,
  operation: Operation | undefined,
  arbitrary: fc.Arbitrary<Generated>,
  requests: number,
) {
  const from = violations.length;
  lastDigest = undefined;
  const runs = Math.max(1, Math.ceil((requests * SCALE) / CONCURRENCY));
  await fc.assert(
    fc.asyncProperty(fc.array(arbitrary, { minLength: CONCURRENCY, maxLength: CONCURRENCY }), async (batch) => {
      await runBatch(label, operation, batch);
    }),
    { numRuns: runs, seed: seedFor(label), endOnFailure: true },
  );
  expectNoViolations(label, from);
}

// ---------------------------------------------------------------- the operations

/** Reads before writes, deletes last, so the fixtures live as long as possible. */
function order(operation: Operation): number {
  if (operation.method === "delete") return operation.id === "contacts.delete" ? 4 : 3;
  return operation.method === "get" ? 1 : 2;
}

const ordered = [...operations].sort((a, b) => order(a) - order(b));

/** Requests per operation: more where the input is richer. */
function budget(operation: Operation): number {
  if (operation.requestContentType) return 240;
  if (operation.body) return 240;
  if (operation.query && Object.keys(operation.query.shape).length > 2) return 240;
  return 150;
}

describe("fuzzing every operation of the catalogue", () => {
  beforeAll(async () => {
    pngBytes = await tinyPng();
  });

  for (const operation of ordered) {
    it(`${operation.id}: ${operation.method.toUpperCase()} ${operation.path}`, async () => {
      await fuzz(operation.id, operation, requestArbitrary(operation), budget(operation));
    });
  }
});

describe("fuzzing routes and methods", () => {
  const segment = fc.oneof(
    fc.constantFrom(
      "contacts",
      "conversations",
      "messages",
      "tags",
      "webhooks",
      "uploads",
      "events",
      "test-helpers",
      "custom-fields",
      "teams",
      "users",
      "channels",
      "api-keys",
      "attachments",
      "notes",
      "deliveries",
      "content",
    ),
    fc.constantFrom(...RAW_SEGMENTS),
    hostileString.map(encodeComponent).filter((text) => text.length <= MAX_SEGMENT),
  );
  const routeArbitrary: fc.Arbitrary<Generated> = fc
    .record({
      segments: fc.array(segment, { minLength: 0, maxLength: 5 }),
      method: fc.constantFrom("GET", "POST", "PATCH", "DELETE", "PUT", "OPTIONS", "HEAD", "TRACE", "PROPFIND"),
      auth: authArbitrary,
      garbage: garbageAuthorization,
      prefix: fc.constantFrom("/v1/", "/v1//", "/V1/", "/v2/", "/", "/v1/%2e%2e/"),
    })
    .map(({ segments, method, auth, garbage, prefix }) => {
      const path = `${prefix}${segments.join("/")}`;
      // The keyless routes under /v1 (web chat, provider webhooks, the reference) check no key.
      const keyed = path.startsWith("/v1/") && !/^\/v1\/+(webchat|channels\/+webhooks|openapi)/i.test(path);
      return {
        request: { method, path, headers: authorizationFor(auth, garbage) },
        // Outside /v1 there is no key to check: only the envelope and the status class count.
        auth: keyed ? auth : "test",
        intact: false,
      };
    });

  it("answers unknown paths and methods with 4xx error bodies", async () => {
    await fuzz("routes", undefined, routeArbitrary, 320);
  });
});

describe("fuzzing the keyless surfaces", () => {
  interface Surface {
    method: string;
    path: (segment: string) => string;
    headers: () => Record<string, string>;
    body: boolean;
  }
  const surfaces = (): Surface[] => [
    { method: "POST", path: (id) => `/v1/webchat/channels/${id}/sessions`, headers: () => ({}), body: true },
    {
      method: "POST",
      path: () => "/v1/webchat/session/messages",
      headers: () => ({ authorization: `Bearer ${visitorToken}` }),
      body: true,
    },
    {
      method: "GET",
      path: () => "/v1/webchat/session/messages",
      headers: () => ({ authorization: `Bearer ${visitorToken}` }),
      body: false,
    },
    {
      method: "POST",
      path: () => "/v1/webchat/session/receipts",
      headers: () => ({ authorization: `Bearer ${visitorToken}` }),
      body: true,
    },
    { method: "GET", path: (id) => `/webchat/${id}`, headers: () => ({}), body: false },
    { method: "GET", path: (id) => `/files/${id}`, headers: () => ({}), body: false },
    { method: "GET", path: () => "/v1/channels/webhooks/meta", headers: () => ({}), body: false },
    {
      method: "POST",
      path: () => "/v1/channels/webhooks/meta",
      headers: () => ({ "x-hub-signature-256": "sha256=00" }),
      body: true,
    },
  ];
  const keylessArbitrary = (): fc.Arbitrary<Generated> =>
    fc
      .record({
        surface: fc.constantFrom(...surfaces()),
        segment: fc.oneof(
          {
            weight: 4,
            arbitrary: fc.constantFrom(webchatChannelId, lowerId(webchatChannelId), ...main.ids.attachment),
          },
          {
            weight: 3,
            arbitrary: fc
              .oneof(hostileString, idShapes)
              .map(encodeComponent)
              .filter((text) => text.length <= MAX_SEGMENT),
          },
          { weight: 2, arbitrary: fc.constantFrom(...RAW_SEGMENTS) },
        ),
        token: fc.oneof(
          { weight: 6, arbitrary: fc.constant(undefined) },
          {
            weight: 1,
            arbitrary: fc
              .oneof(hostileString, fc.constant("wct_x"))
              .map((text) => `Bearer ${text.replace(/[^\x20-\x7e]/g, "?")}`),
          },
        ),
        body: fc.oneof(
          fc.record(
            {
              name: fc.oneof(fc.string({ maxLength: 30 }), hostileValue),
              email: fc.oneof(fc.emailAddress(), hostileValue),
            },
            { requiredKeys: [] },
          ),
          fc.record({ text: fc.oneof(fc.string({ minLength: 1, maxLength: 60 }), hostileValue) }),
          fc.record({
            message_id: fc.oneof(fc.constantFrom(...main.ids.message), hostileValue),
            status: fc.oneof(fc.constantFrom("delivered", "read"), hostileValue),
          }),
          mutatedObject(fc.constant({ text: "hi" }), ["text", "name", "email"]),
          hostileValue,
        ),
        raw: fc.option(fc.constantFrom(...INVALID_JSON), { nil: undefined, freq: 6 }),
        query: fc.oneof(
          fc.constant(""),
          fc.constantFrom(...RAW_QUERIES),
          fc
            .record(
              {
                expires: fc.oneof(fc.nat().map(String), hostileString),
                signature: hostileString,
                "hub.mode": fc.constantFrom("subscribe", "x"),
                "hub.verify_token": hostileString,
                "hub.challenge": hostileString,
              },
              { requiredKeys: [] },
            )
            .map((query) => serializeQuery(asQueryEntries(query))),
        ),
      })
      .map(({ surface, segment, token, body, raw, query }) => {
        const headers: Record<string, string> = { ...surface.headers(), ...(token ? { authorization: token } : {}) };
        const request: RawRequest = {
          method: surface.method,
          path: `${surface.path(segment)}${query ? `?${query}` : ""}`,
          headers,
        };
        if (surface.body) {
          request.body = raw ?? toJson(body);
          headers["content-type"] = "application/json";
        }
        return { request, auth: "test" as AuthKind, intact: false };
      });

  it("answers the web chat, file-link and provider-webhook routes with 2xx or 4xx error bodies", async () => {
    await fuzz("keyless", undefined, keylessArbitrary(), 480);
  });
});

describe("the fuzzing itself", () => {
  it(`sent at least ${MIN_REQUESTS} requests, and verified refused writes left every row unchanged`, () => {
    expect(stats.requests).toBeGreaterThanOrEqual(MIN_REQUESTS * Math.min(1, SCALE));
    // Refused write batches were compared row by row: enough of them, past authentication too.
    expect(stats.verifiedRefusedWrites).toBeGreaterThan(1000 * Math.min(1, SCALE));
    expect(stats.verifiedRefusedPastAuth).toBeGreaterThan(500 * Math.min(1, SCALE));
    // Every operation was reached.
    for (const operation of operations) expect(stats.byOperation.get(operation.id) ?? 0).toBeGreaterThan(0);
  });
});
