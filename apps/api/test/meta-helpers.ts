import { randomBytes } from "node:crypto";
import { type MetaSimulator, type RecordedRequest, sendWebhook, startMetaSimulator } from "@parley/channels/testing";
import { afterAll, beforeAll, expect } from "vitest";
import { connectChannel } from "../src/channels/service.js";
import { type Client, eventually, type TestApi } from "./harness.js";

/**
 * Meta's side of the live channels for the meta-*.test.ts files: the Graph API simulator
 * the worker talks to, live channels connected to it, and webhooks posted as Meta does.
 */

export interface SimulatorHandle {
  simulator: MetaSimulator;
}

/**
 * Starts the Graph API simulator for the file. Register it before `useTestWorker`, whose
 * options read the simulator's address when the worker starts (and whose `afterAll` then
 * runs first: the worker stops before the simulator closes).
 */
export function useMetaSimulator(): SimulatorHandle {
  const handle = {} as SimulatorHandle;
  beforeAll(async () => {
    handle.simulator = await startMetaSimulator();
  });
  afterAll(() => handle.simulator?.close());
  return handle;
}

export type MetaChannelType = "whatsapp" | "messenger" | "instagram";

export interface MetaChannel {
  id: string;
  type: MetaChannelType;
  /** `phone_number_id`, `page_id` or `instagram_account_id`. */
  accountId: string;
  accessToken: string;
  appSecret: string;
  verifyToken: string;
}

/** A numeric id as Meta gives them (phone number, page and account ids), unique enough for a file. */
export function metaId(): string {
  return String(100_000_000_000_000 + Math.floor(Math.random() * 899_999_999_999_999));
}

/** A WhatsApp id: the sender's phone number in international form, digits only. */
export function waId(): string {
  return `1555${String(Math.floor(Math.random() * 10_000_000)).padStart(7, "0")}`;
}

/** A Page- or Instagram-scoped id. */
export function scopedId(): string {
  return String(1_000_000_000_000_000 + Math.floor(Math.random() * 8_000_000_000_000_000));
}

export function randomSecret(prefix: string): string {
  return `${prefix}_${randomBytes(16).toString("hex")}`;
}

const ACCOUNT_SETTING: Record<MetaChannelType, string> = {
  whatsapp: "phone_number_id",
  messenger: "page_id",
  instagram: "instagram_account_id",
};

/** A live Meta channel of the organization, as `pnpm admin connect-channel` connects it, on the simulator's token. */
export async function connectMetaChannel(
  api: TestApi,
  simulator: MetaSimulator,
  organizationId: string,
  type: MetaChannelType,
  options: { accountId?: string; appSecret?: string; verifyToken?: string } = {},
): Promise<MetaChannel> {
  const accountId = options.accountId ?? metaId();
  const appSecret = options.appSecret ?? randomSecret("appsecret");
  const verifyToken = options.verifyToken ?? randomSecret("verify");
  const channel = await connectChannel(api.context.db, api.context.secretBox, {
    organizationId,
    environment: "live",
    type,
    name: `Live ${type}`,
    provider: "meta",
    settings: {
      [ACCOUNT_SETTING[type]]: accountId,
      access_token: simulator.accessToken,
      app_secret: appSecret,
      verify_token: verifyToken,
    },
  });
  return { id: channel.id, type, accountId, accessToken: simulator.accessToken, appSecret, verifyToken };
}

export function metaWebhookUrl(api: TestApi): string {
  return `${api.baseUrl}/channels/webhooks/meta`;
}

/** POSTs a webhook signed with `appSecret` and expects Meta's answer: 200 `EVENT_RECEIVED`. */
export async function deliverWebhook(api: TestApi, payload: unknown, appSecret: string) {
  const response = await sendWebhook(metaWebhookUrl(api), payload, appSecret);
  expect(response, "the webhook is accepted").toEqual({ status: 200, body: "EVENT_RECEIVED" });
}

export interface MetaJobRow {
  id: string;
  attempts: number;
  last_error: string | null;
}

/** The `receive_meta_webhook` jobs waiting or in hand (a completed job is deleted). */
export async function metaWebhookJobs(api: TestApi): Promise<MetaJobRow[]> {
  return api.client.sql<MetaJobRow[]>`
    select jobs.id::text, jobs.attempts, jobs.last_error
    from graphile_worker._private_jobs as jobs
    join graphile_worker._private_tasks as tasks on tasks.id = jobs.task_id
    where tasks.identifier = 'receive_meta_webhook'
    order by jobs.id`;
}

/**
 * Waits until every webhook accepted so far has been processed: no `receive_meta_webhook`
 * job is left. A job that failed (it stays, with `last_error`, for its retry) fails the test.
 */
export async function waitForWebhookJobs(api: TestApi) {
  const left = await eventually(
    () => metaWebhookJobs(api),
    (rows) => rows.length === 0 || rows.some((row) => row.last_error !== null),
  );
  expect(left, "every receive_meta_webhook job completed").toEqual([]);
}

export interface StoredMessage {
  id: string;
  organization_id: string;
  conversation_id: string;
  direction: string;
  status: string | null;
  provider_message_id: string | null;
}

/** The messages (any organization) with this provider id. */
export async function messagesByProviderId(api: TestApi, providerMessageId: string): Promise<StoredMessage[]> {
  return api.client.sql<StoredMessage[]>`
    select id, organization_id, conversation_id, direction, status, provider_message_id
    from messages where provider_message_id = ${providerMessageId} order by created_at, id`;
}

/** Waits for the inbound message with this provider id, then returns it as GET /messages/{id} does. */
export async function waitForInbound(api: TestApi, client: Client, providerMessageId: string, timeoutMs = 10_000) {
  const [row] = await eventually(
    () => messagesByProviderId(api, providerMessageId),
    (rows) => rows.length > 0,
    timeoutMs,
  );
  const response = await client.get(`/messages/${row?.id}`);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body;
}

export async function providerIdOf(api: TestApi, messageId: string): Promise<string> {
  const [row] = await api.client.sql<{ provider_message_id: string | null }[]>`
    select provider_message_id from messages where id = ${messageId}`;
  expect(row?.provider_message_id, `the provider id of ${messageId}`).toEqual(expect.any(String));
  return row?.provider_message_id as string;
}

/** The simulator's send requests (`POST /{version}/{account}/messages`) for one account. */
export function sendRequests(simulator: MetaSimulator, accountId: string): RecordedRequest[] {
  return simulator.requests.filter(
    (request) =>
      request.method === "POST" && new URL(request.path, "http://x").pathname.endsWith(`/${accountId}/messages`),
  );
}

/** The body of a recorded request, typed loosely for assertions. */
export function bodyOf(request: RecordedRequest | undefined): any {
  return request?.body;
}

/** GET /conversations/{id}/messages, oldest first. */
export async function conversationMessages(client: Client, conversationId: string): Promise<any[]> {
  const response = await client.get(`/conversations/${conversationId}/messages`, { query: { limit: 100 } });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return [...response.body.data].reverse();
}

/** POST /messages with a body; expects 201 `queued`. */
export async function postMessage(client: Client, body: Record<string, unknown>) {
  const response = await client.post("/messages", { body });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  expect(response.body.status).toBe("queued");
  return response.body;
}
