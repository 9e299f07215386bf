import type { AddressInfo } from "node:net";
import { createDatabaseClient, type DatabaseClient, runMigrations } from "@parley/db";
import { type RunningWorker, startWorker, type WorkerOptions } from "@parley/worker";
import { pino } from "pino";
import { afterAll, beforeAll, expect, inject } from "vitest";
import { createApp } from "../src/app.js";
import { loadConfig } from "../src/config.js";
import type { AppContext } from "../src/context.js";
import { listenForRevocations } from "../src/http/key-cache.js";
import { RequestRelay } from "../src/http/request-relay.js";
import { createOrganization } from "../src/organizations/organizations.js";
import { createAppContext, createHttpServer } from "../src/server.js";

export interface TestApi {
  baseUrl: string;
  context: AppContext;
  client: DatabaseClient;
  /** The database this app uses: the run's shared one, or the file's own. */
  databaseUrl: string;
}

export interface TestApiOptions {
  /**
   * A fresh, migrated database for this file alone. Files that run a worker need it:
   * a worker delivers every queued message of its database, other files' included.
   */
  ownDatabase?: boolean;
  /**
   * The URL of a database the file started itself (its own PostgreSQL server, which it may
   * restart), read when the app starts; already migrated.
   */
  databaseUrl?: () => string;
  /** Called with the text of every statement the app sends to PostgreSQL. */
  onQuery?: (query: string) => void;
  /**
   * A quiet write adds its jobs itself, as startApi sets up unless `RELAY_IN_REQUEST=false`
   * (RequestRelay; here the job queue's schema is looked for every 50 ms, and `clock` may
   * replace its clock). Off by default: most files look at the outbox rows a send or an
   * event leaves.
   */
  relayInRequest?: boolean | { clock: () => number };
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface TestOrganization {
  id: string;
  live: string;
  test: string;
}

/**
 * Every test file's visitors come from 127.0.0.1 and share one database: the web chat
 * allowances per address are lifted unless a file sets its own (hostile/webchat-rate-limit).
 */
const TEST_WEBCHAT_LIMITS = {
  WEBCHAT_SESSIONS_PER_MINUTE_PER_ADDRESS: "1000000",
  WEBCHAT_SESSIONS_PER_MINUTE_PER_CHANNEL: "1000000",
  WEBCHAT_MESSAGES_PER_MINUTE_PER_ADDRESS: "1000000",
  WEBCHAT_MESSAGES_PER_MINUTE_PER_CHANNEL: "1000000",
};

/** The real express app on a real PostgreSQL, listening on a free port for this test file. */
export function useTestApi(env: Record<string, string> = {}, options: TestApiOptions = {}): TestApi {
  const api = {} as TestApi;
  let close: () => Promise<void> = async () => {};
  beforeAll(async () => {
    const config = loadConfig({ ...TEST_WEBCHAT_LIMITS, ...env });
    api.databaseUrl = options.databaseUrl
      ? options.databaseUrl()
      : options.ownDatabase
        ? await createOwnDatabase(inject("databaseUrl"))
        : inject("databaseUrl");
    const client = createDatabaseClient(api.databaseUrl, {
      max: 10,
      ...(options.onQuery ? { onQuery: options.onQuery } : {}),
    });
    const context = await createAppContext(
      client,
      pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" }),
      config,
      () => api.baseUrl.replace(/\/v1$/, ""),
    );
    // The production server's own settings and its answers to what Node refuses (408, 431).
    // As startApi does: the key cache serves once revocations are heard.
    const revocations = context.apiKeyCache
      ? listenForRevocations(api.databaseUrl, context.apiKeyCache, context.logger)
      : undefined;
    if (options.relayInRequest) {
      const clock = typeof options.relayInRequest === "object" ? options.relayInRequest.clock : undefined;
      context.requestRelay = new RequestRelay({ queueCheckMs: 50, ...(clock ? { clock } : {}) });
      void context.requestRelay.watchQueue(client.sql, () => {});
    }
    const server = createHttpServer(createApp(context), config, context.logger).listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    api.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    api.context = context;
    api.client = client;
    close = async () => {
      await new Promise((resolve) => server.close(resolve));
      await revocations?.close();
      context.requestRelay?.close();
      await context.rateLimitCounter.close().catch(() => {});
      await client.close();
      if (options.ownDatabase) await dropOwnDatabase(inject("databaseUrl"), api.databaseUrl);
    };
  });
  afterAll(() => close());
  return api;
}

async function createOwnDatabase(sharedUrl: string): Promise<string> {
  const name = `parley_test_${process.pid}_${Date.now().toString(36)}`;
  const admin = createDatabaseClient(sharedUrl, { max: 1 });
  try {
    await admin.sql.unsafe(`create database ${name}`);
  } finally {
    await admin.close();
  }
  const url = new URL(sharedUrl);
  url.pathname = `/${name}`;
  await runMigrations(url.toString());
  return url.toString();
}

async function dropOwnDatabase(sharedUrl: string, ownUrl: string) {
  const admin = createDatabaseClient(sharedUrl, { max: 1 });
  try {
    await admin.sql.unsafe(`drop database if exists ${new URL(ownUrl).pathname.slice(1)} with (force)`);
  } finally {
    await admin.close();
  }
}

export interface TestWorker {
  worker: RunningWorker;
}

/**
 * The real worker (relay, delivery, receipts) in this process, on the file's database.
 * Use with `useTestApi(env, { ownDatabase: true })`, called before this. `options` may be
 * a function, read when the worker starts: for addresses known only then (simulators).
 */
export function useTestWorker(
  api: TestApi,
  options: Partial<WorkerOptions> | (() => Partial<WorkerOptions>) = {},
): TestWorker {
  const handle = {} as TestWorker;
  beforeAll(async () => {
    handle.worker = await startWorker({
      connectionString: api.databaseUrl,
      logger: pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" }),
      publicBaseUrl: api.baseUrl.replace(/\/v1$/, ""),
      sandbox: { deliveryDelayMs: 50, readDelayMs: 50 },
      relayPollMs: 10,
      ...(typeof options === "function" ? options() : options),
    });
    api.context.onChangeCommitted = () => handle.worker.wake();
  });
  afterAll(() => handle.worker?.stop());
  return handle;
}

/** Polls `read` until `done` holds, at most `timeoutMs`; returns the last value read. */
export async function eventually<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A client bound to one key, as `as()` returns it. */
export type Client = ReturnType<typeof as>;

/** ISO 8601 UTC with milliseconds, as every timestamp of the API. */
export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The error body of decisions.md: status, code, a message, the request id of the header, and `param` when given. */
export function expectError(response: ApiResponse, status: number, code: string, param?: string) {
  expect(response.status, JSON.stringify(response.body)).toBe(status);
  expect(response.body.error.code).toBe(code);
  expect(response.body.error.request_id).toBe(response.headers.get("x-parley-request-id"));
  expect(typeof response.body.error.message).toBe("string");
  if (param !== undefined) expect(response.body.error.param).toBe(param);
}

/** 422 `validation_error` naming `param`, with `param` among the details. */
export function expectValidationError(response: ApiResponse, param: string) {
  expectError(response, 422, "validation_error", param);
  expect(response.body.error.details).toEqual(expect.arrayContaining([{ param, message: expect.any(String) }]));
}

export interface StoredEvent {
  id: string;
  type: string;
  environment: "live" | "test";
  data: Record<string, any>;
}

/** The events recorded for an organization and environment, oldest first, straight from the outbox. */
export async function storedEvents(
  api: TestApi,
  organizationId: string,
  environment: "live" | "test" = "test",
): Promise<StoredEvent[]> {
  return api.client.sql<StoredEvent[]>`
    select id, type, environment, data from events
    where organization_id = ${organizationId} and environment = ${environment}
    order by created_at, id`;
}

/** A new organization with a client for its test key and one for its live key. */
export async function setupOrganization(api: TestApi) {
  const org = await createTestOrganization(api);
  return { org, client: as(api, org.test), live: as(api, org.live) };
}

/**
 * A conversation (no channel) of a new organization's test environment holding `count`
 * sent text messages a second apart, the newest a second old, inserted with SQL. `before`
 * runs once the conversation exists and before its messages do (an ANALYZE that sees it
 * empty).
 */
/** A conversation of `count` messages inserted by SQL, a second apart, their ids `idPrefix` and a number. */
export async function conversationWithMessages(
  api: TestApi,
  count: number,
  before?: () => Promise<unknown>,
  idPrefix = "msg_",
) {
  const { org, client } = await setupOrganization(api);
  const contact = await client.post("/contacts", { body: { name: "Busy" } });
  const conversation = await client.post("/conversations", { body: { contact_id: contact.body.id } });
  expect(conversation.status).toBe(201);
  await before?.();
  await api.client.sql`
    insert into messages (id, organization_id, environment, conversation_id, direction, type, text, status, created_at, updated_at)
    select ${idPrefix} || lpad(i::text, 26, '0'), ${org.id}, 'test', ${conversation.body.id}, 'outbound', 'text', 'x', 'sent',
           now() - make_interval(secs => i), now()
    from generate_series(1, ${count}::int) as i`;
  return { org, client, conversationId: conversation.body.id as string };
}

export async function createTestOrganization(api: TestApi, name = "Test organization"): Promise<TestOrganization> {
  const created = await createOrganization(api.context.db, name);
  return { id: created.organization.id, live: created.keys.live, test: created.keys.test };
}

/** The longest a test request waits for its whole answer. */
const REQUEST_TIMEOUT_MS = 60_000;

export interface RequestOptions {
  key?: string | undefined;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
  query?: Record<string, string | number | undefined>;
}

export async function call<T = any>(
  api: TestApi,
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<ApiResponse<T>> {
  const url = new URL(api.baseUrl + path);
  for (const [name, value] of Object.entries(options.query ?? {})) {
    if (value !== undefined) url.searchParams.set(name, String(value));
  }
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: string | undefined;
  if (options.rawBody !== undefined) body = options.rawBody;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["content-type"] ??= "application/json";
  }
  // A server that never answers fails the test with the request it did not answer, not a
  // test timeout that says nothing of where it waited.
  const signal = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
  const { response, text } = await fetch(url, { method, headers, body, signal })
    .then(async (response) => ({ response, text: await response.text() }))
    .catch((error: unknown) => {
      throw signal.aborted
        ? new Error(`${method} ${url.pathname} had no answer within ${REQUEST_TIMEOUT_MS} ms`)
        : error;
    });
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // Not JSON (the /docs page): keep the text.
  }
  return { status: response.status, headers: response.headers, body: parsed as T };
}

/** A client bound to one key: `as(key).post("/contacts", { body })`. */
export function as(api: TestApi, key: string) {
  const send =
    (method: string) =>
    <T = any>(path: string, options: Omit<RequestOptions, "key"> = {}) =>
      call<T>(api, method, path, { ...options, key });
  return { get: send("GET"), post: send("POST"), patch: send("PATCH"), delete: send("DELETE"), put: send("PUT") };
}

/** Walks every page of a list, following `next_cursor` until `has_more` is false. */
export async function walkList<T = any>(
  client: ReturnType<typeof as>,
  path: string,
  query: Record<string, string | number | undefined> = {},
): Promise<T[]> {
  const items: T[] = [];
  let after: string | undefined;
  for (let page = 0; page < 1000; page++) {
    const response = await client.get(path, { query: { ...query, after } });
    if (response.status !== 200) throw new Error(`list failed: ${response.status} ${JSON.stringify(response.body)}`);
    items.push(...response.body.data);
    if (!response.body.pagination.has_more) return items;
    after = response.body.pagination.next_cursor;
  }
  throw new Error("list did not end");
}
