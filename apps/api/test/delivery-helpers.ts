import { setTimeout as sleep } from "node:timers/promises";
import { expect } from "vitest";
import { as, createTestOrganization, eventually, type TestApi } from "./harness.js";

export type Client = ReturnType<typeof as>;

export interface RecordedEvent {
  id: string;
  type: string;
  data: Record<string, any>;
}

export interface JobRow {
  id: string;
  task_identifier: string;
  payload: Record<string, any>;
  locked_by: string | null;
  attempts: number;
  max_attempts: number;
  last_error: string | null;
}

/** A new organization and a client on its test key. */
export async function testClient(api: TestApi) {
  const org = await createTestOrganization(api);
  return { org, client: as(api, org.test) };
}

export async function sandboxChannel(client: Client, type: string) {
  const response = await client.get("/channels", { query: { type } });
  expect(response.status).toBe(200);
  expect(response.body.data).toHaveLength(1);
  return response.body.data[0];
}

/** A new contact and a conversation with it on the test environment's sandbox channel of `type`. */
export async function openConversation(client: Client, type: string) {
  const channel = await sandboxChannel(client, type);
  return createConversation(client, { channel_id: channel.id });
}

/**
 * A conversation on the sandbox channel of `type` that a send can reach: where the channel
 * has a session window (WhatsApp, Messenger, Instagram), the contact writes first, as the
 * sandbox fails a free message outside the window just as live does.
 */
export async function sendableConversation(client: Client, type: string) {
  const conversation = await openConversation(client, type);
  const channel = await sandboxChannel(client, type);
  if (channel.capabilities.session_window) await receiveText(client, conversation.id, "Hello from the contact");
  return conversation;
}

/** A conversation without a channel: a manual record. */
export async function manualConversation(client: Client) {
  return createConversation(client, {});
}

async function createConversation(client: Client, body: Record<string, unknown>) {
  const contact = await client.post("/contacts", { body: { name: "Ada" } });
  expect(contact.status, JSON.stringify(contact.body)).toBe(201);
  const conversation = await client.post("/conversations", { body: { contact_id: contact.body.id, ...body } });
  expect(conversation.status, JSON.stringify(conversation.body)).toBe(201);
  return conversation.body;
}

/** GET /conversations/{id}; expects 200. */
export async function getConversation(client: Client, id: string) {
  const response = await client.get(`/conversations/${id}`);
  expect(response.status).toBe(200);
  return response.body;
}

/** POST /messages with a text; expects 201. */
export async function sendText(client: Client, conversationId: string, text: string) {
  const response = await client.post("/messages", { body: { conversation_id: conversationId, type: "text", text } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

/** A message from the contact through the test helper; expects 201. */
export async function receiveText(client: Client, conversationId: string, text = "Hello") {
  const response = await client.post("/test-helpers/inbound-messages", {
    body: { conversation_id: conversationId, type: "text", text },
  });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

/** The message's status straight from the database: polling it costs no API request. */
export async function statusOf(api: TestApi, messageId: string): Promise<string | null | undefined> {
  const [row] = await api.client.sql<{ status: string | null }[]>`select status from messages where id = ${messageId}`;
  return row?.status;
}

/** Waits until the message has `status` (polled in the database), then returns GET /messages/{id}. */
export async function waitForStatus(
  api: TestApi,
  client: Client,
  messageId: string,
  status: string,
  timeoutMs = 10_000,
) {
  await eventually(
    () => statusOf(api, messageId),
    (current) => current === status,
    timeoutMs,
  );
  const response = await client.get(`/messages/${messageId}`);
  expect(response.status).toBe(200);
  expect(response.body.status).toBe(status);
  return response.body;
}

/** Every event whose data names this message, oldest first. */
export async function messageEvents(api: TestApi, messageId: string): Promise<RecordedEvent[]> {
  return api.client.sql<RecordedEvent[]>`
    select id, type, data from events where data->'message'->>'id' = ${messageId} order by created_at, id`;
}

/** The types of the message's events, oldest first. */
export async function eventTypes(api: TestApi, messageId: string): Promise<string[]> {
  return (await messageEvents(api, messageId)).map((event) => event.type);
}

/** The one event of `type` for the message (fails when there are none or several). */
export async function onlyEvent(api: TestApi, messageId: string, type: string): Promise<RecordedEvent> {
  const matching = (await messageEvents(api, messageId)).filter((event) => event.type === type);
  expect(matching, `${type} events of ${messageId}`).toHaveLength(1);
  return matching[0] as RecordedEvent;
}

/** graphile-worker's jobs (pending or in hand) whose payload names this message (the `jobs` view hides payloads). */
export async function jobsFor(api: TestApi, messageId: string, task?: string): Promise<JobRow[]> {
  const rows = await api.client.sql<JobRow[]>`
    select jobs.id::text, tasks.identifier as task_identifier, jobs.payload, jobs.locked_by, jobs.attempts,
      jobs.max_attempts, jobs.last_error
    from graphile_worker._private_jobs as jobs
    join graphile_worker._private_tasks as tasks on tasks.id = jobs.task_id
    where jobs.payload->>'message_id' = ${messageId} or (jobs.payload::jsonb)->'message_ids' ? ${messageId}
    order by jobs.id`;
  return task ? rows.filter((row) => row.task_identifier === task) : rows;
}

export async function outboxRows(api: TestApi, messageId: string): Promise<number> {
  const [row] = await api.client.sql<{ count: number }[]>`
    select count(*)::int as count from message_outbox where message_id = ${messageId}`;
  return row?.count ?? 0;
}

/** Waits until nothing is left to do for the message: no outbox row, no job. */
export async function waitUntilSettled(api: TestApi, messageId: string, timeoutMs = 10_000) {
  await eventually(
    async () => ({ outbox: await outboxRows(api, messageId), jobs: await jobsFor(api, messageId) }),
    (state) => state.outbox === 0 && state.jobs.length === 0,
    timeoutMs,
  );
}

/**
 * Adds an `apply_receipt` job as a provider's webhook would bring it, waits until the job
 * has run (it is gone once it completed; a failing job would stay with `last_error`).
 */
export async function applyReceipt(api: TestApi, messageId: string, status: string) {
  const [job] = await api.client.sql<{ id: string }[]>`
    select (graphile_worker.add_job('apply_receipt', json_build_object('message_id', ${messageId}::text, 'status', ${status}::text))).id::text as id`;
  const jobId = job?.id ?? "";
  const left = await eventually(
    () => api.client.sql<JobRow[]>`select id::text, last_error from graphile_worker.jobs where id = ${jobId}::bigint`,
    (rows) => rows.length === 0 || rows[0]?.last_error != null,
  );
  expect(left, "the apply_receipt job completed").toEqual([]);
}

/**
 * The one fixed wait of these tests: to show that nothing more happens to a message, wait
 * this long past the sandbox's delivery and read delays (50 ms each in the test workers).
 */
export async function waitPastReceiptDelays() {
  await sleep(400);
}
