import { relayBothOnce } from "@parley/core";
import { OUTBOX_WAKE_CHANNEL } from "@parley/db";
import { installJobQueue, type RunningWorker, startWorker } from "@parley/worker";
import { pino } from "pino";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { QUIET_WINDOW_MS, QUIET_WRITES } from "../src/http/request-relay.js";
import {
  jobsFor,
  outboxRows,
  sandboxChannel,
  sendableConversation,
  sendText,
  testClient,
  waitForStatus,
} from "./delivery-helpers.js";
import { eventually, useTestApi } from "./harness.js";
import { onlyConversation, startSession, visitor, webchatChannel } from "./webchat-helpers.js";
import { useWebhookReceiver } from "./webhook-receiver.js";

/**
 * A quiet API process's writes add their delivery and webhook jobs in their own
 * transaction (RequestRelay), unless the outbox holds rows they can see, which keep their
 * order. No worker runs until the last test: the jobs and outbox rows stay to be read.
 */
/** Every statement the app sends to PostgreSQL. */
const statements: string[] = [];
const api = useTestApi(
  { RATE_LIMIT_PER_MINUTE: "100000" },
  { ownDatabase: true, relayInRequest: { clock: () => clock.now() }, onQuery: (query) => statements.push(query) },
);
const receiver = useWebhookReceiver();

beforeAll(async () => {
  // graphile-worker's schema, as the first worker installs it; the API finds it within 50 ms.
  await installJobQueue(api.databaseUrl);
  await eventually(
    async () => api.context.requestRelay?.now(),
    (ready) => ready === true,
  );
});

// Each test starts from empty outboxes: an inbound message (the conversation's first)
// records its event through the outbox, which would hold the next event behind it.
beforeEach(async () => {
  while ((await relayBothOnce(api.client.sql)) > 0);
});

interface WebhookJob {
  event_ids: string[];
  endpoint_id: string;
}

async function webhookJobsOf(endpointId: string): Promise<WebhookJob[]> {
  const rows = await api.client.sql<{ payload: WebhookJob }[]>`
    select jobs.payload from graphile_worker._private_jobs as jobs
    join graphile_worker._private_tasks as tasks on tasks.id = jobs.task_id
    where tasks.identifier = 'deliver_webhook' and jobs.payload->>'endpoint_id' = ${endpointId}
    order by jobs.id`;
  return rows.map((row) => row.payload);
}

async function eventOutboxRows(eventIds: readonly string[]): Promise<number> {
  const [row] = await api.client.sql<{ count: number }[]>`
    select count(*)::int as count from event_outbox where event_id = any(${eventIds as string[]})`;
  return row?.count ?? 0;
}

/** The events whose data names the contact, oldest first. */
async function contactEvents(contactId: string) {
  return api.client.sql<{ id: string; type: string }[]>`
    select id, type from events where data->'contact'->>'id' = ${contactId} order by id`;
}

/**
 * The relays' wake-ups from here on: those the API's answers give (`onChangeCommitted`, as
 * startApi wires it) and the NOTIFYs on `parley_outbox_wake` (their payloads, in order).
 */
async function listenForWakeUps() {
  const wakeUps = { byAnswer: 0, heard: [] as string[], stop: async () => {} };
  const before = api.context.onChangeCommitted;
  api.context.onChangeCommitted = () => {
    wakeUps.byAnswer += 1;
  };
  const listener = await api.client.sql.listen(OUTBOX_WAKE_CHANNEL, (payload) => wakeUps.heard.push(payload));
  wakeUps.stop = async () => {
    api.context.onChangeCommitted = before;
    await listener.unlisten();
  };
  return wakeUps;
}

/**
 * The API's RequestRelay times writes by this clock: real time, stopped while `whileBusy`
 * runs (so the writes it begins stay within the quiet window), then moved past the window.
 */
const clock = {
  stoppedAt: undefined as number | undefined,
  ahead: 0,
  now(): number {
    return this.stoppedAt ?? performance.now() + this.ahead;
  },
};

/** Runs `work` in a busy process: QUIET_WRITES writes begun just before it. */
async function whileBusy<T>(work: () => Promise<T>): Promise<T> {
  const relay = api.context.requestRelay;
  if (!relay) throw new Error("this file's API relays in its requests");
  clock.stoppedAt = clock.now();
  for (let begun = 0; begun < QUIET_WRITES; begun++) relay.writeEnded(relay.writeBegan());
  try {
    return await work();
  } finally {
    clock.ahead += clock.stoppedAt - (performance.now() + clock.ahead) + QUIET_WINDOW_MS + 1;
    clock.stoppedAt = undefined;
  }
}

describe("a send", () => {
  it("adds its own delivery job in its transaction when it is the only write in flight: no outbox row", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "whatsapp");
    const message = await sendText(client, conversation.id, "Straight to the queue");

    expect(await outboxRows(api, message.id)).toBe(0);
    const jobs = await jobsFor(api, message.id, "deliver_message");
    // Made as the relay makes them: the message's id, no traceparents with tracing off.
    expect(jobs.map((job) => job.payload)).toEqual([{ message_ids: [message.id] }]);
  });

  it("takes the outbox behind rows it can see (sends before it), and the relay keeps their order", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "whatsapp");
    const first = await whileBusy(() => sendText(client, conversation.id, "First, while busy"));
    expect(await outboxRows(api, first.id)).toBe(1);

    const second = await sendText(client, conversation.id, "Second, alone");
    expect(await outboxRows(api, second.id)).toBe(1);
    expect(await jobsFor(api, second.id)).toEqual([]);

    // Other files' rows are not in this database: the pass relays these two, in one job, in order.
    await relayBothOnce(api.client.sql);
    const [job] = await jobsFor(api, second.id, "deliver_message");
    expect(job?.payload).toEqual({ message_ids: [first.id, second.id] });
  });

  it("takes the outbox in a busy process (20 writes begun within 100 ms), which keeps its batches", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "whatsapp");
    const message = await whileBusy(() => sendText(client, conversation.id, "Busy"));
    expect(await outboxRows(api, message.id)).toBe(1);
    expect(await jobsFor(api, message.id)).toEqual([]);
    await relayBothOnce(api.client.sql);
    expect(await outboxRows(api, message.id)).toBe(0);
  });

  it("wakes no relay when it added its own job; one that took the outbox wakes them, by its answer or its statement", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "whatsapp");
    const wakeUps = await listenForWakeUps();
    try {
      await sendText(client, conversation.id, "Its own job");
      expect(wakeUps.byAnswer).toBe(0);

      // Busy: the outbox, and the answer wakes the relays.
      const busy = await whileBusy(() => sendText(client, conversation.id, "Busy"));
      expect(await outboxRows(api, busy.id)).toBe(1);
      await eventually(
        async () => wakeUps.byAnswer,
        (count) => count === 1,
      );

      // Quiet, behind that row: the outbox too, and its statement wakes the relays at commit.
      const behind = await sendText(client, conversation.id, "Behind the busy one");
      expect(await outboxRows(api, behind.id)).toBe(1);
      const marker = `marker ${behind.id}`;
      await api.client.sql`select pg_notify(${OUTBOX_WAKE_CHANNEL}, ${marker})`;
      // Notifications arrive in commit order: the statement's, then the marker.
      const heard = await eventually(
        async () => wakeUps.heard,
        (payloads) => payloads.includes(marker),
      );
      // One wake-up before it, the statement's: neither the quiet send nor the busy one sent any.
      expect(heard.slice(0, heard.indexOf(marker) + 1)).toEqual(["", marker]);
      expect(wakeUps.byAnswer).toBe(1);
    } finally {
      await wakeUps.stop();
    }
  });

  it("on a conversation without a channel is stored with neither a job nor an outbox row", async () => {
    const { client } = await testClient(api);
    const contact = await client.post("/contacts", { body: { name: "Manual" } });
    const conversation = await client.post("/conversations", { body: { contact_id: contact.body.id } });
    const message = await sendText(client, conversation.body.id, "A note for the record");
    expect(message.status).toBeNull();
    expect(await outboxRows(api, message.id)).toBe(0);
    expect(await jobsFor(api, message.id)).toEqual([]);
  });
});

describe("a change's events", () => {
  it("add one webhook job per subscribed endpoint, the change's events in order, and no outbox row", async () => {
    const { client } = await testClient(api);
    const everything = await client.post("/webhooks", { body: { url: receiver.endpoint().url, events: ["*"] } });
    const tagsOnly = await client.post("/webhooks", { body: { url: receiver.endpoint().url, events: ["tag.added"] } });
    const other = await client.post("/webhooks", {
      body: { url: receiver.endpoint().url, events: ["conversation.created"] },
    });
    const tag = await client.post("/tags", { body: { name: "vip" } });
    expect([everything.status, tagsOnly.status, other.status, tag.status]).toEqual([201, 201, 201, 201]);

    const contact = await client.post("/contacts", { body: { name: "Grace", tags: [tag.body.id] } });
    expect(contact.status).toBe(201);
    const events = await contactEvents(contact.body.id);
    expect(events.map((event) => event.type)).toEqual(["contact.created", "tag.added"]);
    const [created, tagged] = events.map((event) => event.id);

    expect(await eventOutboxRows(events.map((event) => event.id))).toBe(0);
    expect(await webhookJobsOf(everything.body.id)).toEqual([
      { event_ids: [created, tagged], endpoint_id: everything.body.id },
    ]);
    expect(await webhookJobsOf(tagsOnly.body.id)).toEqual([{ event_ids: [tagged], endpoint_id: tagsOnly.body.id }]);
    expect(await webhookJobsOf(other.body.id)).toEqual([]);
  });

  it("of a new contact without tags or custom fields are one statement with the contact and its jobs", async () => {
    const { client } = await testClient(api);
    const endpoint = await client.post("/webhooks", { body: { url: receiver.endpoint().url, events: ["*"] } });
    // The key is read once, then served from memory.
    expect((await client.get("/contacts")).status).toBe(200);
    statements.length = 0;
    const contact = await client.post("/contacts", { body: { name: "One statement", email: "one@example.com" } });
    expect(contact.status).toBe(201);
    // The rate limit's counts reach PostgreSQL by a flush of their own, whenever it runs.
    const sent = statements.filter((query) => !query.includes("rate_limit_windows"));
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/insert into contacts/);

    const events = await contactEvents(contact.body.id);
    expect(events.map((event) => event.type)).toEqual(["contact.created"]);
    expect(await webhookJobsOf(endpoint.body.id)).toEqual([
      { event_ids: [events[0]?.id], endpoint_id: endpoint.body.id },
    ]);
    // Answered as stored.
    expect((await client.get(`/contacts/${contact.body.id}`)).body).toEqual(contact.body);
  });

  it("with no endpoint subscribed leave neither a job nor an outbox row", async () => {
    const { client } = await testClient(api);
    const contact = await client.post("/contacts", { body: { name: "Nobody listens" } });
    const events = await contactEvents(contact.body.id);
    expect(events.map((event) => event.type)).toEqual(["contact.created"]);
    expect(await eventOutboxRows(events.map((event) => event.id))).toBe(0);
  });

  it("take the outbox behind a row they can see, wake the relays at commit, and the relay sends them in order", async () => {
    const { client } = await testClient(api);
    const endpoint = await client.post("/webhooks", { body: { url: receiver.endpoint().url, events: ["*"] } });
    const contact = await whileBusy(() => client.post("/contacts", { body: { name: "Earlier" } }));
    const [earlier] = await contactEvents(contact.body.id);
    expect(await eventOutboxRows([earlier?.id ?? ""])).toBe(1);

    const wakeUps = await listenForWakeUps();
    let updated: Awaited<ReturnType<typeof client.patch>>;
    try {
      updated = await client.patch(`/contacts/${contact.body.id}`, { body: { name: "Later" } });
      const marker = `marker ${contact.body.id}`;
      await api.client.sql`select pg_notify(${OUTBOX_WAKE_CHANNEL}, ${marker})`;
      const heard = await eventually(
        async () => wakeUps.heard,
        (payloads) => payloads.includes(marker),
      );
      // Its statement's wake-up, and none by its answer.
      expect(heard).toEqual(["", marker]);
      expect(wakeUps.byAnswer).toBe(0);
    } finally {
      await wakeUps.stop();
    }
    expect(updated.status).toBe(200);
    const events = await contactEvents(contact.body.id);
    expect(events.map((event) => event.type)).toEqual(["contact.created", "contact.updated"]);
    expect(await eventOutboxRows(events.map((event) => event.id))).toBe(2);
    expect(await webhookJobsOf(endpoint.body.id)).toEqual([]);

    await relayBothOnce(api.client.sql);
    expect(await webhookJobsOf(endpoint.body.id)).toEqual([
      { event_ids: events.map((event) => event.id), endpoint_id: endpoint.body.id },
    ]);
  });
});

describe("a web chat visitor's message", () => {
  /** The events about the conversation, oldest first: their ids and types. */
  async function conversationEvents(conversationId: string) {
    return api.client.sql<{ id: string; type: string }[]>`
      select id, type from events where data->'conversation'->>'id' = ${conversationId} order by id`;
  }

  it("adds its message.received job itself; the first, behind its new conversation's outbox rows, takes the outbox", async () => {
    const { client, org } = await testClient(api);
    const endpoint = await client.post("/webhooks", { body: { url: receiver.endpoint().url, events: ["*"] } });
    const token = await startSession(api, await webchatChannel(api, org.test));
    const page = visitor(api, token);

    // The first message creates the contact and the conversation (their events in the
    // outbox), so its own event joins them there, in order.
    expect((await page.post("/session/messages", { text: "Hello?" })).status).toBe(201);
    const conversationId = await onlyConversation(api, org.test, await webchatChannel(api, org.test));
    const first = await conversationEvents(conversationId);
    expect(first.map((event) => event.type)).toEqual(["conversation.created", "message.received"]);
    expect(await eventOutboxRows(first.map((event) => event.id))).toBe(2);
    await relayBothOnce(api.client.sql);

    const second = await page.post("/session/messages", { text: "Anyone there?" });
    expect(second.status).toBe(201);
    const [received] = (await conversationEvents(conversationId)).slice(first.length);
    expect(received?.type).toBe("message.received");
    expect(await eventOutboxRows([received?.id ?? ""])).toBe(0);
    expect((await webhookJobsOf(endpoint.body.id)).at(-1)).toEqual({
      event_ids: [received?.id],
      endpoint_id: endpoint.body.id,
    });
  });

  it("that reopens its closed conversation adds both events in one job per endpoint, in order", async () => {
    const { client, org } = await testClient(api);
    const endpoint = await client.post("/webhooks", {
      body: { url: receiver.endpoint().url, events: ["conversation.reopened", "message.received"] },
    });
    const channelId = await webchatChannel(api, org.test);
    const page = visitor(api, await startSession(api, channelId));
    expect((await page.post("/session/messages", { text: "Hello?" })).status).toBe(201);
    const conversationId = await onlyConversation(api, org.test, channelId);
    expect((await client.post(`/conversations/${conversationId}/close`)).status).toBe(200);
    await relayBothOnce(api.client.sql);
    const before = (await conversationEvents(conversationId)).length;

    expect((await page.post("/session/messages", { text: "One more thing" })).status).toBe(201);
    const events = (await conversationEvents(conversationId)).slice(before);
    expect(events.map((event) => event.type)).toEqual(["conversation.reopened", "message.received"]);
    expect(await eventOutboxRows(events.map((event) => event.id))).toBe(0);
    expect((await webhookJobsOf(endpoint.body.id)).at(-1)).toEqual({
      event_ids: events.map((event) => event.id),
      endpoint_id: endpoint.body.id,
    });
  });
});

describe("with a worker running", () => {
  let worker: RunningWorker | undefined;
  afterAll(() => worker?.stop());

  it("delivers what a quiet send queued itself, and its webhooks reach the endpoint in order", async () => {
    const { client } = await testClient(api);
    const endpoint = receiver.endpoint();
    const created = await client.post("/webhooks", {
      body: { url: endpoint.url, events: ["message.sent", "message.delivered"] },
    });
    expect(created.status).toBe(201);
    const conversation = await sendableConversation(client, "whatsapp");
    expect((await sandboxChannel(client, "whatsapp")).type).toBe("whatsapp");
    worker = await startWorker({
      connectionString: api.databaseUrl,
      logger: pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" }),
      publicBaseUrl: api.baseUrl.replace(/\/v1$/, ""),
      sandbox: { deliveryDelayMs: 0, readDelayMs: 60_000 },
      relayPollMs: 10,
    });
    const message = await sendText(client, conversation.id, "Delivered without the relay");
    expect(await outboxRows(api, message.id)).toBe(0);
    await waitForStatus(api, client, message.id, "delivered");
    const received = await eventually(
      async () => endpoint.received.map((request) => request.envelope.type),
      (types) => types.length >= 2,
    );
    expect(received).toEqual(["message.sent", "message.delivered"]);
  });
});
