import { randomUUID } from "node:crypto";
import { channelTypes } from "@parley/schema";
import { describe, expect, it } from "vitest";
import {
  as,
  type Client,
  expectError,
  expectValidationError,
  setupOrganization,
  storedEvents,
  TIMESTAMP,
  useTestApi,
  walkList,
} from "../../test/harness.js";
import { connectChannel } from "../channels/service.js";
import { createApiKey } from "../organizations/api-keys.js";
import { createUser } from "../organizations/organizations.js";

const api = useTestApi();

type Query = Record<string, string | number | undefined>;

const CONVERSATION_ID = /^conv_[0-9A-HJKMNP-TV-Z]{26}$/;
const UNKNOWN = {
  contact: "cnt_01ARZ3NDEKTSV4RRFFQ69G5FAV",
  channel: "chn_01ARZ3NDEKTSV4RRFFQ69G5FAV",
  conversation: "conv_01ARZ3NDEKTSV4RRFFQ69G5FAV",
  user: "usr_01ARZ3NDEKTSV4RRFFQ69G5FAV",
  team: "team_01ARZ3NDEKTSV4RRFFQ69G5FAV",
  tag: "tag_01ARZ3NDEKTSV4RRFFQ69G5FAV",
};
const STATUSES = ["open", "pending", "closed"] as const;

const setup = () => setupOrganization(api);

/** Setup plus one contact and the sandbox WhatsApp channel of the test environment. */
async function setupWithContact() {
  const context = await setup();
  const contact = await createContact(context.client);
  const channel = await sandboxChannel(context.client, "whatsapp");
  return { ...context, contact, channel };
}

async function sandboxChannel(client: Client, type: string) {
  const response = await client.get("/channels", { query: { type } });
  expect(response.status).toBe(200);
  expect(response.body.data).toHaveLength(1);
  return response.body.data[0];
}

async function connectLiveChannel(organizationId: string, type: "whatsapp" | "email" = "whatsapp") {
  return connectChannel(api.context.db, api.context.secretBox, {
    organizationId,
    environment: "live",
    type,
    name: `Live ${type}`,
    provider: "cloud",
    settings: { access_token: "secret-token" },
  });
}

async function createContact(client: Client, body: Record<string, unknown> = {}) {
  const response = await client.post("/contacts", { body });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

async function createTag(client: Client, name: string) {
  const response = await client.post("/tags", { body: { name } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

async function createTeam(client: Client, name = "Support") {
  const response = await client.post("/teams", { body: { name } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

async function createAgent(organizationId: string, name = "Agent") {
  return createUser(api.context.db, { organizationId, name, email: `${randomUUID()}@example.com` });
}

async function createConversation(client: Client, body: Record<string, unknown>) {
  const response = await client.post("/conversations", { body });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

async function getConversation(client: Client, id: string) {
  const response = await client.get(`/conversations/${id}`);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body;
}

async function patch(client: Client, id: string, body: Record<string, unknown>) {
  const response = await client.patch(`/conversations/${id}`, { body });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body;
}

async function action(client: Client, id: string, name: string, body?: Record<string, unknown>) {
  const response = await client.post(`/conversations/${id}/${name}`, body ? { body } : {});
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body;
}

async function listIds(client: Client, query: Query = {}) {
  const response = await client.get("/conversations", { query: { limit: 100, ...query } });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.data.map((conversation: { id: string }) => conversation.id);
}

async function setTimestamp(column: "created_at" | "updated_at", id: string, at: string) {
  if (column === "created_at") await api.client.sql`update conversations set created_at = ${at} where id = ${id}`;
  else await api.client.sql`update conversations set updated_at = ${at} where id = ${id}`;
}

const eventsOf = (organizationId: string, environment?: "live" | "test") =>
  storedEvents(api, organizationId, environment);

/** The events recorded by `run`, in order. */
async function eventsDuring(
  organizationId: string,
  run: () => Promise<unknown>,
  environment: "live" | "test" = "test",
) {
  const before = (await eventsOf(organizationId, environment)).length;
  await run();
  return (await eventsOf(organizationId, environment)).slice(before);
}

function expectStampedBetween(stamp: string | null, before: number, after: number) {
  expect(stamp).toMatch(TIMESTAMP);
  const at = Date.parse(stamp ?? "");
  expect(at).toBeGreaterThanOrEqual(before);
  expect(at).toBeLessThanOrEqual(after);
}

describe("POST /conversations", () => {
  it("creates an open conversation on a channel with 201, and GET returns it", async () => {
    const { client, contact, channel } = await setupWithContact();

    const response = await client.post("/conversations", { body: { contact_id: contact.id, channel_id: channel.id } });

    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      object: "conversation",
      id: expect.stringMatching(CONVERSATION_ID),
      status: "open",
      contact_id: contact.id,
      channel_id: channel.id,
      channel_type: "whatsapp",
      external_id: null,
      assigned_to: null,
      team_id: null,
      metadata: {},
      unverified: false,
      closed_at: null,
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect(await getConversation(client, response.body.id)).toEqual(response.body);
  });

  it.each(channelTypes)("takes channel_type %s from the channel", async (type) => {
    const { client } = await setup();
    const contact = await createContact(client);
    const channel = await sandboxChannel(client, type);

    const conversation = await createConversation(client, { contact_id: contact.id, channel_id: channel.id });

    expect(conversation.channel_type).toBe(type);
    expect(conversation.channel_id).toBe(channel.id);
  });

  it("creates a manual record without channel_id: channel_id and channel_type are null", async () => {
    const { client, contact } = await setupWithContact();

    const conversation = await createConversation(client, { contact_id: contact.id });

    expect(conversation).toMatchObject({ status: "open", channel_id: null, channel_type: null, closed_at: null });
    expect(await getConversation(client, conversation.id)).toEqual(conversation);
  });

  it("stores external_id and metadata", async () => {
    const { client, contact } = await setupWithContact();
    const metadata = { source: "crm", nested: { priority: 2 }, list: [1, "two"] };

    const conversation = await createConversation(client, {
      contact_id: contact.id,
      external_id: "ticket-1",
      metadata,
    });

    expect(conversation).toMatchObject({ external_id: "ticket-1", metadata });
    expect(await getConversation(client, conversation.id)).toEqual(conversation);
  });

  it("accepts ids in lower case and returns them in upper case", async () => {
    const { client, contact, channel } = await setupWithContact();

    const conversation = await createConversation(client, {
      contact_id: contact.id.toLowerCase(),
      channel_id: channel.id.toLowerCase(),
    });

    expect(conversation.contact_id).toBe(contact.id);
    expect(conversation.channel_id).toBe(channel.id);
    expect((await getConversation(client, conversation.id.toLowerCase())).id).toBe(conversation.id);
  });

  it("refuses a body without contact_id with 422 naming contact_id", async () => {
    const { org, client, channel } = await setupWithContact();

    expectValidationError(await client.post("/conversations", { body: { channel_id: channel.id } }), "contact_id");
    expectValidationError(await client.post("/conversations", {}), "contact_id");
    expect(await listIds(client)).toEqual([]);
    expect((await eventsOf(org.id)).map((event) => event.type)).toEqual(["contact.created"]);
  });

  it.each([
    ["contact_id", { contact_id: "cnt_123" }],
    ["contact_id", { contact_id: UNKNOWN.channel }],
    ["contact_id", { contact_id: 42 }],
    ["channel_id", { contact_id: UNKNOWN.contact, channel_id: "whatsapp" }],
    ["external_id", { contact_id: UNKNOWN.contact, external_id: "" }],
    ["external_id", { contact_id: UNKNOWN.contact, external_id: "e".repeat(121) }],
    ["metadata", { contact_id: UNKNOWN.contact, metadata: "plain" }],
    ["status", { contact_id: UNKNOWN.contact, status: "open" }],
    ["subject", { contact_id: UNKNOWN.contact, subject: "Hello" }],
  ])("refuses a bad or unknown field %s with 422", async (param, body) => {
    const { client } = await setup();

    expectValidationError(await client.post("/conversations", { body }), param);
    expect(await listIds(client)).toEqual([]);
  });

  it("accepts an external_id of 120 characters", async () => {
    const { client, contact } = await setupWithContact();

    const conversation = await createConversation(client, { contact_id: contact.id, external_id: "e".repeat(120) });

    expect(conversation.external_id).toBe("e".repeat(120));
  });

  it("refuses an unknown contact with 404 resource_not_found naming contact_id", async () => {
    const { org, client } = await setup();

    expectError(
      await client.post("/conversations", { body: { contact_id: UNKNOWN.contact } }),
      404,
      "resource_not_found",
      "contact_id",
    );
    expect(await listIds(client)).toEqual([]);
    expect(await eventsOf(org.id)).toEqual([]);
  });

  it("refuses a contact of another organization with 404 naming contact_id", async () => {
    const { client } = await setup();
    const other = await setup();
    const foreign = await createContact(other.client);

    expectError(
      await client.post("/conversations", { body: { contact_id: foreign.id } }),
      404,
      "resource_not_found",
      "contact_id",
    );
    expect(await listIds(client)).toEqual([]);
    expect(await listIds(other.client)).toEqual([]);
  });

  it("refuses a contact of the other environment with 404 naming contact_id", async () => {
    const { client, live } = await setup();
    const liveContact = await createContact(live);
    const testContact = await createContact(client);

    expectError(
      await client.post("/conversations", { body: { contact_id: liveContact.id } }),
      404,
      "resource_not_found",
      "contact_id",
    );
    expectError(
      await live.post("/conversations", { body: { contact_id: testContact.id } }),
      404,
      "resource_not_found",
      "contact_id",
    );
    expect(await listIds(client)).toEqual([]);
    expect(await listIds(live)).toEqual([]);
  });

  it("refuses an unknown channel, or one of another organization, with 404 naming channel_id", async () => {
    const { client, contact } = await setupWithContact();
    const other = await setup();
    const foreign = await sandboxChannel(other.client, "whatsapp");

    for (const channelId of [UNKNOWN.channel, foreign.id]) {
      expectError(
        await client.post("/conversations", { body: { contact_id: contact.id, channel_id: channelId } }),
        404,
        "resource_not_found",
        "channel_id",
      );
    }
    expect(await listIds(client)).toEqual([]);
  });

  it("refuses a channel of the other environment with 404 naming channel_id", async () => {
    const { org, client, live, channel: sandbox } = await setupWithContact();
    const liveChannel = await connectLiveChannel(org.id);
    const testContact = await createContact(client);
    const liveContact = await createContact(live);

    expectError(
      await client.post("/conversations", { body: { contact_id: testContact.id, channel_id: liveChannel.id } }),
      404,
      "resource_not_found",
      "channel_id",
    );
    expectError(
      await live.post("/conversations", { body: { contact_id: liveContact.id, channel_id: sandbox.id } }),
      404,
      "resource_not_found",
      "channel_id",
    );
    const onLive = await createConversation(live, { contact_id: liveContact.id, channel_id: liveChannel.id });
    expect(onLive).toMatchObject({ channel_id: liveChannel.id, channel_type: "whatsapp" });
  });
});

describe("find-or-create on external_id", () => {
  it("returns the existing conversation unchanged with 200", async () => {
    const { org, client, contact, channel } = await setupWithContact();
    const otherContact = await createContact(client);
    const first = await createConversation(client, {
      contact_id: contact.id,
      channel_id: channel.id,
      external_id: "ticket-7",
      metadata: { first: true },
    });

    const again = await client.post("/conversations", {
      body: { contact_id: otherContact.id, external_id: "ticket-7", metadata: { second: true } },
    });

    expect(again.status).toBe(200);
    expect(again.body).toEqual(first);
    expect(await getConversation(client, first.id)).toEqual(first);
    expect(await listIds(client)).toEqual([first.id]);
    const created = (await eventsOf(org.id)).filter((event) => event.type === "conversation.created");
    expect(created).toHaveLength(1);
  });

  it("creates a new conversation with 201 when external_id matches none", async () => {
    const { client, contact } = await setupWithContact();
    const first = await createConversation(client, { contact_id: contact.id, external_id: "ticket-1" });

    const second = await client.post("/conversations", { body: { contact_id: contact.id, external_id: "ticket-10" } });

    expect(second.status).toBe(201);
    expect(second.body.id).not.toBe(first.id);
    expect(await listIds(client)).toEqual([second.body.id, first.id]);
  });

  it("creates a new conversation each time without external_id", async () => {
    const { client, contact } = await setupWithContact();

    const first = await createConversation(client, { contact_id: contact.id });
    const second = await createConversation(client, { contact_id: contact.id });

    expect(second.id).not.toBe(first.id);
  });

  it("yields exactly one conversation when concurrent creates carry the same external_id", async () => {
    const { org, client, contact, channel } = await setupWithContact();

    const responses = await Promise.all(
      Array.from({ length: 8 }, (_, index) =>
        client.post("/conversations", {
          body: { contact_id: contact.id, channel_id: channel.id, external_id: "race-1", metadata: { index } },
        }),
      ),
    );

    const statuses = responses.map((response) => response.status).sort();
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
    const ids = new Set(responses.map((response) => response.body.id));
    expect(ids.size).toBe(1);
    expect(await listIds(client)).toEqual([...ids]);
    const created = (await eventsOf(org.id)).filter((event) => event.type === "conversation.created");
    expect(created).toHaveLength(1);
  });

  it("finds within the key's own environment and organization only", async () => {
    const { client, live, contact } = await setupWithContact();
    const other = await setup();
    const testConversation = await createConversation(client, { contact_id: contact.id, external_id: "ticket-1" });
    const liveContact = await createContact(live);
    const foreignContact = await createContact(other.client);

    const onLive = await live.post("/conversations", { body: { contact_id: liveContact.id, external_id: "ticket-1" } });
    const foreign = await other.client.post("/conversations", {
      body: { contact_id: foreignContact.id, external_id: "ticket-1" },
    });

    expect(onLive.status).toBe(201);
    expect(foreign.status).toBe(201);
    expect(new Set([testConversation.id, onLive.body.id, foreign.body.id]).size).toBe(3);
  });

  it("frees an external_id cleared by PATCH for a new conversation", async () => {
    const { client, contact } = await setupWithContact();
    const first = await createConversation(client, { contact_id: contact.id, external_id: "ticket-1" });
    await patch(client, first.id, { external_id: null });

    const second = await client.post("/conversations", { body: { contact_id: contact.id, external_id: "ticket-1" } });

    expect(second.status).toBe(201);
    expect(second.body.id).not.toBe(first.id);
  });
});

describe("Idempotency-Key on POST /conversations", () => {
  it("replays the stored response without creating a second conversation", async () => {
    const { org, client, contact, channel } = await setupWithContact();
    const headers = { "Idempotency-Key": `conv-${randomUUID()}` };
    const body = { contact_id: contact.id, channel_id: channel.id, metadata: { attempt: 1 } };

    const first = await client.post("/conversations", { body, headers });
    const replay = await client.post("/conversations", { body, headers });

    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(first.body);
    expect(await listIds(client)).toEqual([first.body.id]);
    const created = (await eventsOf(org.id)).filter((event) => event.type === "conversation.created");
    expect(created).toHaveLength(1);
  });

  it("refuses the same key with a different body with 409 idempotency_key_reuse", async () => {
    const { client, contact } = await setupWithContact();
    const headers = { "Idempotency-Key": `conv-${randomUUID()}` };
    const first = await client.post("/conversations", { body: { contact_id: contact.id }, headers });

    const reused = await client.post("/conversations", {
      body: { contact_id: contact.id, metadata: { different: true } },
      headers,
    });

    expect(first.status).toBe(201);
    expectError(reused, 409, "idempotency_key_reuse");
    expect(await listIds(client)).toEqual([first.body.id]);
  });

  it("does not store a failed call: a retry with the same key runs normally", async () => {
    const { client } = await setup();
    const headers = { "Idempotency-Key": `conv-${randomUUID()}` };
    const body = { contact_id: UNKNOWN.contact };

    expectError(await client.post("/conversations", { body, headers }), 404, "resource_not_found", "contact_id");
    expectError(await client.post("/conversations", { body, headers }), 404, "resource_not_found", "contact_id");
  });
});

describe("GET /conversations/{conversation_id}", () => {
  it("answers 404 resource_not_found for an unknown or malformed id", async () => {
    const { client } = await setup();

    expectError(await client.get(`/conversations/${UNKNOWN.conversation}`), 404, "resource_not_found");
    expectError(await client.get("/conversations/not-an-id"), 404, "resource_not_found");
  });
});

describe("PATCH /conversations/{conversation_id}", () => {
  const moves = STATUSES.flatMap((from) => STATUSES.map((to) => ({ from, to })));

  it.each(moves)("moves status $from to $to", async ({ from, to }) => {
    const { client, contact } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id });
    const start = from === "open" ? conversation : await patch(client, conversation.id, { status: from });
    expect(start.status).toBe(from);

    const moved = await patch(client, conversation.id, { status: to });

    expect(moved.status).toBe(to);
    if (to === "closed") expect(moved.closed_at).toMatch(TIMESTAMP);
    else expect(moved.closed_at).toBeNull();
    if (from === "closed" && to === "closed") expect(moved.closed_at).toBe(start.closed_at);
    expect(await getConversation(client, conversation.id)).toEqual(moved);
  });

  it("stamps closed_at when moving to closed and clears it when leaving closed", async () => {
    const { client, contact } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id });

    const before = Date.now();
    const closed = await patch(client, conversation.id, { status: "closed" });
    const after = Date.now();
    const pending = await patch(client, conversation.id, { status: "pending" });

    expectStampedBetween(closed.closed_at, before, after);
    expect(pending).toMatchObject({ status: "pending", closed_at: null });
  });

  it("sets external_id, clears it with null, and leaves absent fields alone", async () => {
    const { client, contact } = await setupWithContact();
    const conversation = await createConversation(client, {
      contact_id: contact.id,
      external_id: "ticket-1",
      metadata: { keep: true },
    });

    const renamed = await patch(client, conversation.id, { external_id: "ticket-2" });
    const cleared = await patch(client, conversation.id, { external_id: null });

    expect(renamed).toMatchObject({ external_id: "ticket-2", metadata: { keep: true }, status: "open" });
    expect(cleared).toMatchObject({ external_id: null, metadata: { keep: true }, status: "open" });
    expect(await listIds(client, { external_id: "ticket-1" })).toEqual([]);
  });

  it("replaces the whole metadata object", async () => {
    const { client, contact } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id, metadata: { a: 1, b: 2 } });

    const updated = await patch(client, conversation.id, { metadata: { c: 3 } });

    expect(updated.metadata).toEqual({ c: 3 });
    expect((await getConversation(client, conversation.id)).metadata).toEqual({ c: 3 });
  });

  it("moves updated_at forward and keeps created_at", async () => {
    const { client, contact } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id });
    await setTimestamp("updated_at", conversation.id, "2020-01-01T00:00:00.000Z");

    const updated = await patch(client, conversation.id, { status: "pending" });

    expect(updated.created_at).toBe(conversation.created_at);
    expect(Date.parse(updated.updated_at)).toBeGreaterThanOrEqual(Date.parse(conversation.updated_at));
  });

  it("refuses an external_id taken by another conversation with 409 resource_already_exists", async () => {
    const { org, client, contact } = await setupWithContact();
    await createConversation(client, { contact_id: contact.id, external_id: "taken" });
    const conversation = await createConversation(client, { contact_id: contact.id, external_id: "mine" });

    const events = await eventsDuring(org.id, async () => {
      expectError(
        await client.patch(`/conversations/${conversation.id}`, { body: { external_id: "taken", status: "closed" } }),
        409,
        "resource_already_exists",
        "external_id",
      );
    });

    expect(events).toEqual([]);
    expect(await getConversation(client, conversation.id)).toEqual(conversation);
  });

  it("accepts the conversation's own external_id again, and one only the other environment has", async () => {
    const { client, live, contact } = await setupWithContact();
    const liveContact = await createContact(live);
    await createConversation(live, { contact_id: liveContact.id, external_id: "live-ticket" });
    const conversation = await createConversation(client, { contact_id: contact.id, external_id: "mine" });

    expect((await patch(client, conversation.id, { external_id: "mine" })).external_id).toBe("mine");
    expect((await patch(client, conversation.id, { external_id: "live-ticket" })).external_id).toBe("live-ticket");
  });

  it.each([
    ["status", { status: "archived" }],
    ["status", { status: null }],
    ["external_id", { external_id: "" }],
    ["external_id", { external_id: "e".repeat(121) }],
    ["metadata", { metadata: null }],
    ["metadata", { metadata: [1, 2] }],
    ["contact_id", { contact_id: UNKNOWN.contact }],
    ["channel_id", { channel_id: UNKNOWN.channel }],
    ["closed_at", { closed_at: "2026-01-01T00:00:00.000Z" }],
    ["assigned_to", { assigned_to: UNKNOWN.user }],
  ])("refuses %s in %j with 422 and changes nothing", async (param, body) => {
    const { client, contact } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id });

    expectValidationError(await client.patch(`/conversations/${conversation.id}`, { body }), param);
    expect(await getConversation(client, conversation.id)).toEqual(conversation);
  });

  it("answers 404 resource_not_found for an unknown conversation", async () => {
    const { client } = await setup();

    expectError(
      await client.patch(`/conversations/${UNKNOWN.conversation}`, { body: { status: "closed" } }),
      404,
      "resource_not_found",
    );
  });
});

describe("POST /conversations/{conversation_id}/close", () => {
  it("closes the conversation and stamps closed_at", async () => {
    const { client, contact } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id });

    const before = Date.now();
    const closed = await action(client, conversation.id, "close");
    const after = Date.now();

    expect(closed.status).toBe("closed");
    expectStampedBetween(closed.closed_at, before, after);
    expect(await getConversation(client, conversation.id)).toEqual(closed);
  });

  it("closes a pending conversation", async () => {
    const { client, contact } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id });
    await patch(client, conversation.id, { status: "pending" });

    const closed = await action(client, conversation.id, "close");

    expect(closed.status).toBe("closed");
    expect(closed.closed_at).toMatch(TIMESTAMP);
  });

  it("keeps the first closed_at when closing a closed conversation again", async () => {
    const { client, contact } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id });
    const first = await action(client, conversation.id, "close");
    await api.client.sql`update conversations set closed_at = '2020-01-01T00:00:00.000Z' where id = ${conversation.id}`;

    const again = await action(client, conversation.id, "close");

    expect(again.status).toBe("closed");
    expect(again.closed_at).toBe("2020-01-01T00:00:00.000Z");
    expect(again.updated_at).toBe(first.updated_at);
  });

  it("answers 404 resource_not_found for an unknown conversation", async () => {
    const { client } = await setup();

    expectError(await client.post(`/conversations/${UNKNOWN.conversation}/close`), 404, "resource_not_found");
  });
});

describe("POST /conversations/{conversation_id}/reopen", () => {
  it("moves a closed conversation to open and clears closed_at", async () => {
    const { client, contact } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id });
    await action(client, conversation.id, "close");

    const reopened = await action(client, conversation.id, "reopen");

    expect(reopened).toMatchObject({ status: "open", closed_at: null });
    expect(await getConversation(client, conversation.id)).toEqual(reopened);
  });

  it.each(["open", "pending"] as const)("refuses a %s conversation with 409 invalid_state", async (status) => {
    const { org, client, contact } = await setupWithContact();
    const created = await createConversation(client, { contact_id: contact.id });
    const conversation = status === "open" ? created : await patch(client, created.id, { status });

    const events = await eventsDuring(org.id, async () => {
      expectError(await client.post(`/conversations/${conversation.id}/reopen`), 409, "invalid_state");
    });

    expect(events).toEqual([]);
    expect(await getConversation(client, conversation.id)).toEqual(conversation);
  });

  it("answers 404 resource_not_found for an unknown conversation", async () => {
    const { client } = await setup();

    expectError(await client.post(`/conversations/${UNKNOWN.conversation}/reopen`), 404, "resource_not_found");
  });
});

describe("POST /conversations/{conversation_id}/assign", () => {
  async function setupAssignable() {
    const context = await setupWithContact();
    const conversation = await createConversation(context.client, { contact_id: context.contact.id });
    const agent = await createAgent(context.org.id);
    const team = await createTeam(context.client);
    return { ...context, conversation, agent, team };
  }

  it("assigns an agent with user_id", async () => {
    const { client, conversation, agent } = await setupAssignable();

    const assigned = await action(client, conversation.id, "assign", { user_id: agent.id });

    expect(assigned).toMatchObject({ assigned_to: agent.id, team_id: null });
    expect(await getConversation(client, conversation.id)).toEqual(assigned);
  });

  it("assigns a team with team_id", async () => {
    const { client, conversation, team } = await setupAssignable();

    const assigned = await action(client, conversation.id, "assign", { team_id: team.id });

    expect(assigned).toMatchObject({ assigned_to: null, team_id: team.id });
    expect(await getConversation(client, conversation.id)).toEqual(assigned);
  });

  it("assigns an agent and a team together, given in lower case", async () => {
    const { client, conversation, agent, team } = await setupAssignable();

    const assigned = await action(client, conversation.id, "assign", {
      user_id: agent.id.toLowerCase(),
      team_id: team.id.toLowerCase(),
    });

    expect(assigned).toMatchObject({ assigned_to: agent.id, team_id: team.id, status: "open" });
  });

  it("assigns a live conversation to the organization's agent: agents serve both environments", async () => {
    const { live, agent } = await setupAssignable();
    const contact = await createContact(live);
    const conversation = await createConversation(live, { contact_id: contact.id });

    const assigned = await action(live, conversation.id, "assign", { user_id: agent.id });

    expect(assigned.assigned_to).toBe(agent.id);
  });

  it("refuses a body with neither user_id nor team_id with 422", async () => {
    const { client, conversation } = await setupAssignable();

    expectError(await client.post(`/conversations/${conversation.id}/assign`, { body: {} }), 422, "validation_error");
    expectError(await client.post(`/conversations/${conversation.id}/assign`), 422, "validation_error");
    expect(await getConversation(client, conversation.id)).toEqual(conversation);
  });

  it.each([
    ["user_id", { user_id: "usr_123" }],
    ["user_id", { user_id: UNKNOWN.team }],
    ["team_id", { team_id: "support" }],
    ["user_id", { user_id: null }],
    ["channel_id", { user_id: UNKNOWN.user, channel_id: UNKNOWN.channel }],
  ])("refuses a malformed or unknown field %s with 422", async (param, body) => {
    const { client, conversation } = await setupAssignable();

    expectValidationError(await client.post(`/conversations/${conversation.id}/assign`, { body }), param);
  });

  it("refuses an unknown agent or team with 404 naming the field, and changes nothing", async () => {
    const { org, client, conversation, agent } = await setupAssignable();

    const events = await eventsDuring(org.id, async () => {
      expectError(
        await client.post(`/conversations/${conversation.id}/assign`, { body: { user_id: UNKNOWN.user } }),
        404,
        "resource_not_found",
        "user_id",
      );
      expectError(
        await client.post(`/conversations/${conversation.id}/assign`, {
          body: { user_id: agent.id, team_id: UNKNOWN.team },
        }),
        404,
        "resource_not_found",
        "team_id",
      );
    });

    expect(events).toEqual([]);
    expect(await getConversation(client, conversation.id)).toEqual(conversation);
  });

  it("refuses an agent or team of another organization with 404 resource_not_found", async () => {
    const { client, conversation, team } = await setupAssignable();
    const other = await setup();
    const foreignAgent = await createAgent(other.org.id);
    const foreignTeam = await createTeam(other.client);

    expectError(
      await client.post(`/conversations/${conversation.id}/assign`, { body: { user_id: foreignAgent.id } }),
      404,
      "resource_not_found",
      "user_id",
    );
    expectError(
      await client.post(`/conversations/${conversation.id}/assign`, {
        body: { user_id: foreignAgent.id, team_id: team.id },
      }),
      404,
      "resource_not_found",
      "user_id",
    );
    expectError(
      await client.post(`/conversations/${conversation.id}/assign`, { body: { team_id: foreignTeam.id } }),
      404,
      "resource_not_found",
      "team_id",
    );
    expect(await getConversation(client, conversation.id)).toEqual(conversation);
  });

  it("refuses a team of the other environment with 404 resource_not_found", async () => {
    const { client, live, conversation } = await setupAssignable();
    const liveTeam = await createTeam(live, "Live team");

    expectError(
      await client.post(`/conversations/${conversation.id}/assign`, { body: { team_id: liveTeam.id } }),
      404,
      "resource_not_found",
      "team_id",
    );
    expect(await getConversation(client, conversation.id)).toEqual(conversation);
  });

  it("answers 404 resource_not_found for an unknown conversation", async () => {
    const { client, agent } = await setupAssignable();

    expectError(
      await client.post(`/conversations/${UNKNOWN.conversation}/assign`, { body: { user_id: agent.id } }),
      404,
      "resource_not_found",
    );
  });
});

describe("POST /conversations/{conversation_id}/unassign", () => {
  it("removes the agent only: the team stays (spec: 'Removes the current assignee')", async () => {
    const { org, client, contact } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id });
    const agent = await createAgent(org.id);
    const team = await createTeam(client);
    await action(client, conversation.id, "assign", { user_id: agent.id, team_id: team.id });

    const unassigned = await action(client, conversation.id, "unassign");

    expect(unassigned).toMatchObject({ assigned_to: null, team_id: team.id, status: "open" });
    expect(await getConversation(client, conversation.id)).toEqual(unassigned);
  });

  it("PATCH team_id: null removes the team; a team id moves it there; an unknown team is 404", async () => {
    const { client, contact } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id });
    const team = await createTeam(client);
    const moved = await client.patch(`/conversations/${conversation.id}`, { body: { team_id: team.id } });
    expect(moved.status).toBe(200);
    expect(moved.body.team_id).toBe(team.id);
    const removed = await client.patch(`/conversations/${conversation.id}`, { body: { team_id: null } });
    expect(removed.status).toBe(200);
    expect(removed.body.team_id).toBeNull();
    expectError(
      await client.patch(`/conversations/${conversation.id}`, { body: { team_id: "team_01HZZZZZZZZZZZZZZZZZZZZZZZ" } }),
      404,
      "resource_not_found",
      "team_id",
    );
  });

  it("answers 200 with the conversation unchanged when nothing is assigned", async () => {
    const { client, contact } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id });

    expect(await action(client, conversation.id, "unassign")).toEqual(conversation);
  });

  it("answers 404 resource_not_found for an unknown conversation", async () => {
    const { client } = await setup();

    expectError(await client.post(`/conversations/${UNKNOWN.conversation}/unassign`), 404, "resource_not_found");
  });
});

describe("GET /conversations", () => {
  it("lists newest first, as GET returns them, and pages with a cursor", async () => {
    const { client, contact, channel } = await setupWithContact();
    const first = await createConversation(client, { contact_id: contact.id, channel_id: channel.id });
    const second = await createConversation(client, { contact_id: contact.id });
    const third = await createConversation(client, { contact_id: contact.id, external_id: "x", metadata: { a: 1 } });

    const page = await client.get("/conversations", { query: { limit: 2 } });

    expect(page.status).toBe(200);
    expect(page.body.object).toBe("list");
    expect(page.body.data).toEqual([third, second]);
    expect(page.body.pagination).toEqual({ has_more: true, next_cursor: expect.any(String) });
    const next = await client.get("/conversations", { query: { limit: 2, after: page.body.pagination.next_cursor } });
    expect(next.body.data).toEqual([first]);
    expect(next.body.pagination).toEqual({ has_more: false, next_cursor: null });
    const all = await walkList(client, "/conversations", { limit: 1 });
    expect(all.map((conversation) => conversation.id)).toEqual([third.id, second.id, first.id]);
  });

  it("returns an empty list for a new organization", async () => {
    const { client } = await setup();

    const response = await client.get("/conversations");

    expect(response.body).toEqual({ object: "list", data: [], pagination: { has_more: false, next_cursor: null } });
  });

  it("keeps a filter across pages", async () => {
    const { client, contact } = await setupWithContact();
    const ids: string[] = [];
    for (let index = 0; index < 5; index++) {
      const conversation = await createConversation(client, { contact_id: contact.id });
      if (index % 2 === 0) ids.unshift((await patch(client, conversation.id, { status: "pending" })).id);
    }

    const all = await walkList(client, "/conversations", { limit: 1, status: "pending" });

    expect(all.map((conversation) => conversation.id)).toEqual(ids);
  });

  it("refuses a cursor it did not issue, or one of another list, with 422 invalid_cursor", async () => {
    const { client } = await setupWithContact();
    await createContact(client);
    const contacts = await client.get("/contacts", { query: { limit: 1 } });

    expectError(await client.get("/conversations", { query: { after: "bogus" } }), 422, "invalid_cursor");
    expectError(
      await client.get("/conversations", { query: { after: contacts.body.pagination.next_cursor } }),
      422,
      "invalid_cursor",
    );
  });

  it("filters by status", async () => {
    const { client, contact } = await setupWithContact();
    const open = await createConversation(client, { contact_id: contact.id });
    const pending = await createConversation(client, { contact_id: contact.id });
    const closed = await createConversation(client, { contact_id: contact.id });
    await patch(client, pending.id, { status: "pending" });
    await action(client, closed.id, "close");

    expect(await listIds(client, { status: "open" })).toEqual([open.id]);
    expect(await listIds(client, { status: "pending" })).toEqual([pending.id]);
    expect(await listIds(client, { status: "closed" })).toEqual([closed.id]);
  });

  it("filters by channel_id, given in either case", async () => {
    const { client, contact, channel } = await setupWithContact();
    const email = await sandboxChannel(client, "email");
    const onWhatsapp = await createConversation(client, { contact_id: contact.id, channel_id: channel.id });
    await createConversation(client, { contact_id: contact.id, channel_id: email.id });
    await createConversation(client, { contact_id: contact.id });

    expect(await listIds(client, { channel_id: channel.id })).toEqual([onWhatsapp.id]);
    expect(await listIds(client, { channel_id: channel.id.toLowerCase() })).toEqual([onWhatsapp.id]);
    expect(await listIds(client, { channel_id: UNKNOWN.channel })).toEqual([]);
  });

  it("filters by channel_type", async () => {
    const { client, contact, channel } = await setupWithContact();
    const email = await sandboxChannel(client, "email");
    const onWhatsapp = await createConversation(client, { contact_id: contact.id, channel_id: channel.id });
    const onEmail = await createConversation(client, { contact_id: contact.id, channel_id: email.id });
    await createConversation(client, { contact_id: contact.id });

    expect(await listIds(client, { channel_type: "whatsapp" })).toEqual([onWhatsapp.id]);
    expect(await listIds(client, { channel_type: "email" })).toEqual([onEmail.id]);
    expect(await listIds(client, { channel_type: "webchat" })).toEqual([]);
  });

  it("filters by contact_id", async () => {
    const { client, contact } = await setupWithContact();
    const otherContact = await createContact(client);
    const mine = await createConversation(client, { contact_id: contact.id });
    const theirs = await createConversation(client, { contact_id: otherContact.id });

    expect(await listIds(client, { contact_id: contact.id })).toEqual([mine.id]);
    expect(await listIds(client, { contact_id: otherContact.id.toLowerCase() })).toEqual([theirs.id]);
    expect(await listIds(client, { contact_id: UNKNOWN.contact })).toEqual([]);
  });

  it("filters by assigned_to and team_id", async () => {
    const { org, client, contact } = await setupWithContact();
    const ada = await createAgent(org.id, "Ada");
    const bob = await createAgent(org.id, "Bob");
    const support = await createTeam(client, "Support");
    const sales = await createTeam(client, "Sales");
    const adaSupport = await createConversation(client, { contact_id: contact.id });
    const bobOnly = await createConversation(client, { contact_id: contact.id });
    const salesOnly = await createConversation(client, { contact_id: contact.id });
    await createConversation(client, { contact_id: contact.id });
    await action(client, adaSupport.id, "assign", { user_id: ada.id, team_id: support.id });
    await action(client, bobOnly.id, "assign", { user_id: bob.id });
    await action(client, salesOnly.id, "assign", { team_id: sales.id });

    expect(await listIds(client, { assigned_to: ada.id })).toEqual([adaSupport.id]);
    expect(await listIds(client, { assigned_to: bob.id.toLowerCase() })).toEqual([bobOnly.id]);
    expect(await listIds(client, { team_id: support.id })).toEqual([adaSupport.id]);
    expect(await listIds(client, { team_id: sales.id })).toEqual([salesOnly.id]);
    expect(await listIds(client, { assigned_to: ada.id, team_id: sales.id })).toEqual([]);
    expect(await listIds(client, { assigned_to: UNKNOWN.user })).toEqual([]);
  });

  it("drops a conversation from assigned_to once it is unassigned", async () => {
    const { org, client, contact } = await setupWithContact();
    const agent = await createAgent(org.id);
    const conversation = await createConversation(client, { contact_id: contact.id });
    await action(client, conversation.id, "assign", { user_id: agent.id });
    expect(await listIds(client, { assigned_to: agent.id })).toEqual([conversation.id]);

    await action(client, conversation.id, "unassign");

    expect(await listIds(client, { assigned_to: agent.id })).toEqual([]);
  });

  it("filters by tag_id through the contact", async () => {
    const { client } = await setup();
    const vip = await createTag(client, "VIP");
    const lead = await createTag(client, "Lead");
    const tagged = await createContact(client, { tags: [vip.id, lead.id] });
    const other = await createContact(client, { tags: [lead.id] });
    const first = await createConversation(client, { contact_id: tagged.id });
    const second = await createConversation(client, { contact_id: tagged.id });
    const untagged = await createConversation(client, { contact_id: other.id });

    expect(await listIds(client, { tag_id: vip.id })).toEqual([second.id, first.id]);
    expect(await listIds(client, { tag_id: lead.id.toLowerCase() })).toEqual([untagged.id, second.id, first.id]);
    expect(await listIds(client, { tag_id: UNKNOWN.tag })).toEqual([]);
    await client.patch(`/contacts/${tagged.id}`, { body: { tags: [] } });
    expect(await listIds(client, { tag_id: vip.id })).toEqual([]);
  });

  it("filters by exact external_id", async () => {
    const { client, contact } = await setupWithContact();
    const one = await createConversation(client, { contact_id: contact.id, external_id: "ticket-1" });
    await createConversation(client, { contact_id: contact.id, external_id: "ticket-10" });
    await createConversation(client, { contact_id: contact.id, external_id: "TICKET-1" });

    expect(await listIds(client, { external_id: "ticket-1" })).toEqual([one.id]);
    expect(await listIds(client, { external_id: "ticket" })).toEqual([]);
  });

  it("filters by created_after and created_before", async () => {
    const { client, contact } = await setupWithContact();
    const old = await createConversation(client, { contact_id: contact.id });
    const middle = await createConversation(client, { contact_id: contact.id });
    const recent = await createConversation(client, { contact_id: contact.id });
    await setTimestamp("created_at", old.id, "2020-01-01T00:00:00.000Z");
    await setTimestamp("created_at", middle.id, "2021-01-01T00:00:00.000Z");
    await setTimestamp("created_at", recent.id, "2022-01-01T00:00:00.000Z");

    expect(await listIds(client, { created_after: "2020-06-01T00:00:00Z" })).toEqual([recent.id, middle.id]);
    expect(await listIds(client, { created_before: "2021-06-01T00:00:00.000Z" })).toEqual([middle.id, old.id]);
    expect(
      await listIds(client, { created_after: "2020-06-01T00:00:00+02:00", created_before: "2021-06-01T00:00:00Z" }),
    ).toEqual([middle.id]);
    expect(await listIds(client, { created_after: "2021-01-01T00:00:00.000Z" })).toEqual([recent.id, middle.id]);
    expect(await listIds(client, { created_before: "2021-01-01T00:00:00.000Z" })).toEqual([old.id]);
  });

  it("filters by updated_after and updated_before, independently of creation", async () => {
    const { client, contact } = await setupWithContact();
    const touchedLong = await createConversation(client, { contact_id: contact.id });
    const touchedLater = await createConversation(client, { contact_id: contact.id });
    const touchedRecently = await createConversation(client, { contact_id: contact.id });
    await setTimestamp("updated_at", touchedLong.id, "2022-01-01T00:00:00.000Z");
    await setTimestamp("updated_at", touchedLater.id, "2020-01-01T00:00:00.000Z");
    await setTimestamp("updated_at", touchedRecently.id, "2021-01-01T00:00:00.000Z");

    expect(await listIds(client, { updated_after: "2020-06-01T00:00:00Z" })).toEqual([
      touchedRecently.id,
      touchedLong.id,
    ]);
    expect(await listIds(client, { updated_before: "2021-06-01T00:00:00Z" })).toEqual([
      touchedRecently.id,
      touchedLater.id,
    ]);
    expect(
      await listIds(client, { updated_after: "2020-06-01T00:00:00Z", updated_before: "2021-06-01T00:00:00Z" }),
    ).toEqual([touchedRecently.id]);
  });

  it("finds a conversation by updated_after once a PATCH has touched it", async () => {
    const { client, contact } = await setupWithContact();
    const touched = await createConversation(client, { contact_id: contact.id });
    const untouched = await createConversation(client, { contact_id: contact.id });
    await setTimestamp("updated_at", touched.id, "2020-01-01T00:00:00.000Z");
    await setTimestamp("updated_at", untouched.id, "2020-01-01T00:00:00.000Z");
    const since = new Date(Date.now() - 60_000).toISOString();

    await patch(client, touched.id, { metadata: { touched: true } });

    expect(await listIds(client, { updated_after: since })).toEqual([touched.id]);
  });

  it("combines filters", async () => {
    const { client, contact, channel } = await setupWithContact();
    const otherContact = await createContact(client);
    const match = await createConversation(client, { contact_id: contact.id, channel_id: channel.id });
    await createConversation(client, { contact_id: contact.id });
    await createConversation(client, { contact_id: otherContact.id, channel_id: channel.id });
    const closed = await createConversation(client, { contact_id: contact.id, channel_id: channel.id });
    await action(client, closed.id, "close");

    expect(
      await listIds(client, {
        contact_id: contact.id,
        channel_type: "whatsapp",
        status: "open",
        channel_id: channel.id,
      }),
    ).toEqual([match.id]);
  });

  it.each([
    ["status", "archived"],
    ["channel_id", "whatsapp"],
    ["channel_id", UNKNOWN.contact],
    ["channel_type", "telegram"],
    ["contact_id", "cnt_123"],
    ["contact_id", UNKNOWN.channel],
    ["assigned_to", "usr_not-a-ulid-at-all-000000"],
    ["assigned_to", UNKNOWN.team],
    ["team_id", "team_1"],
    ["team_id", UNKNOWN.user],
    ["tag_id", "vip"],
    ["tag_id", UNKNOWN.contact],
    ["external_id", ""],
    ["external_id", "e".repeat(121)],
    ["created_after", "yesterday"],
    ["created_before", "2021-13-01T00:00:00Z"],
    ["updated_after", "2021-01-01"],
    ["updated_before", "now"],
    ["limit", "0"],
    ["limit", "101"],
    ["priority", "high"],
  ])("refuses %s=%s with 422 naming it", async (param, value) => {
    const { client } = await setup();

    expectValidationError(await client.get("/conversations", { query: { [param]: value } }), param);
  });
});

describe("isolation", () => {
  async function expectInvisible(client: Client, conversationId: string) {
    const path = `/conversations/${conversationId}`;
    expectError(await client.get(path), 404, "resource_not_found");
    expectError(await client.patch(path, { body: { status: "pending" } }), 404, "resource_not_found");
    expectError(await client.post(`${path}/close`), 404, "resource_not_found");
    expectError(await client.post(`${path}/reopen`), 404, "resource_not_found");
    expectError(await client.post(`${path}/assign`, { body: { user_id: UNKNOWN.user } }), 404, "resource_not_found");
    expectError(await client.post(`${path}/unassign`), 404, "resource_not_found");
    expectError(await client.post(`${path}/tags`, { body: { tag_id: UNKNOWN.tag } }), 404, "resource_not_found");
    expectError(await client.delete(`${path}/tags/${UNKNOWN.tag}`), 404, "resource_not_found");
    expectError(await client.get(`${path}/notes`), 404, "resource_not_found");
    expectError(await client.post(`${path}/notes`, { body: { body: "Hi" } }), 404, "resource_not_found");
    expect(await listIds(client)).not.toContain(conversationId);
  }

  it("hides a conversation of another organization from every route and list", async () => {
    const owner = await setupWithContact();
    const other = await setup();
    const conversation = await createConversation(owner.client, {
      contact_id: owner.contact.id,
      external_id: "shared",
    });
    const theirContact = await createContact(other.client);
    await createConversation(other.client, { contact_id: theirContact.id });

    await expectInvisible(other.client, conversation.id);
    expect(await listIds(other.client, { contact_id: owner.contact.id })).toEqual([]);
    expect(await listIds(other.client, { external_id: "shared" })).toEqual([]);
    expect(await listIds(other.client, { channel_id: owner.channel.id })).toEqual([]);
    expect(await getConversation(owner.client, conversation.id)).toEqual(conversation);
  });

  it("hides a test conversation from the live key of the same organization, and the other way round", async () => {
    const { client, live, contact } = await setupWithContact();
    const testConversation = await createConversation(client, { contact_id: contact.id });
    const liveContact = await createContact(live);
    const liveConversation = await createConversation(live, { contact_id: liveContact.id });

    await expectInvisible(live, testConversation.id);
    await expectInvisible(client, liveConversation.id);
    expect(await listIds(client)).toEqual([testConversation.id]);
    expect(await listIds(live)).toEqual([liveConversation.id]);
  });

  it("does not list another organization's conversations when filtering by their agent, team or tag", async () => {
    const owner = await setupWithContact();
    const other = await setup();
    const agent = await createAgent(owner.org.id);
    const team = await createTeam(owner.client);
    const tag = await createTag(owner.client, "VIP");
    const contact = await createContact(owner.client, { tags: [tag.id] });
    const conversation = await createConversation(owner.client, { contact_id: contact.id });
    await action(owner.client, conversation.id, "assign", { user_id: agent.id, team_id: team.id });

    expect(await listIds(other.client, { assigned_to: agent.id })).toEqual([]);
    expect(await listIds(other.client, { team_id: team.id })).toEqual([]);
    expect(await listIds(other.client, { tag_id: tag.id })).toEqual([]);
    expect(await listIds(owner.client, { assigned_to: agent.id, team_id: team.id, tag_id: tag.id })).toEqual([
      conversation.id,
    ]);
  });

  it("refuses a cursor issued to the other environment with 422 invalid_cursor", async () => {
    const { client, live, contact } = await setupWithContact();
    await createConversation(client, { contact_id: contact.id });
    await createConversation(client, { contact_id: contact.id });
    const page = await client.get("/conversations", { query: { limit: 1 } });

    expectError(
      await live.get("/conversations", { query: { limit: 1, after: page.body.pagination.next_cursor } }),
      422,
      "invalid_cursor",
    );
  });
});

describe("scopes", () => {
  it("reads with conversations:read and refuses every change without conversations:write", async () => {
    const { org, client, contact } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id });
    const readOnly = await createApiKey(api.context.db, {
      organizationId: org.id,
      environment: "test",
      scopes: ["conversations:read"],
    });
    const reader = as(api, readOnly.key);
    const path = `/conversations/${conversation.id}`;

    expect((await reader.get(path)).body).toEqual(conversation);
    expect(await listIds(reader)).toEqual([conversation.id]);
    expectError(await reader.post("/conversations", { body: { contact_id: contact.id } }), 403, "insufficient_scope");
    expectError(await reader.patch(path, { body: { status: "pending" } }), 403, "insufficient_scope");
    for (const name of ["close", "reopen", "unassign"]) {
      expectError(await reader.post(`${path}/${name}`), 403, "insufficient_scope");
    }
    expectError(await reader.post(`${path}/assign`, { body: { user_id: UNKNOWN.user } }), 403, "insufficient_scope");
    expect(await getConversation(client, conversation.id)).toEqual(conversation);
  });
});

describe("events", () => {
  it("records conversation.created with data.conversation equal to what GET returns", async () => {
    const { org, client, contact, channel } = await setupWithContact();

    const events = await eventsDuring(org.id, () =>
      createConversation(client, {
        contact_id: contact.id,
        channel_id: channel.id,
        external_id: "ticket-1",
        metadata: { a: 1 },
      }),
    );

    const [conversationId] = await listIds(client);
    expect(events.map((event) => event.type)).toEqual(["conversation.created"]);
    expect(events[0]?.data).toEqual({ conversation: await getConversation(client, conversationId) });
    expect(events[0]?.environment).toBe("test");
    expect(events[0]?.id).toMatch(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
  });

  it("records conversation.created for a manual record, with null channel", async () => {
    const { org, client, contact } = await setupWithContact();

    const events = await eventsDuring(org.id, () => createConversation(client, { contact_id: contact.id }));

    expect(events.map((event) => event.type)).toEqual(["conversation.created"]);
    expect(events[0]?.data.conversation).toMatchObject({ channel_id: null, channel_type: null });
  });

  it("records nothing when find-or-create returns an existing conversation", async () => {
    const { org, client, contact } = await setupWithContact();
    await createConversation(client, { contact_id: contact.id, external_id: "ticket-1" });

    const events = await eventsDuring(org.id, () =>
      client.post("/conversations", { body: { contact_id: contact.id, external_id: "ticket-1" } }),
    );

    expect(events).toEqual([]);
  });

  it("records conversation.updated for a PATCH that does not touch status", async () => {
    const { org, client, contact, channel } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id, channel_id: channel.id });

    const events = await eventsDuring(org.id, () =>
      patch(client, conversation.id, { metadata: { b: 2 }, external_id: "ticket-2" }),
    );

    expect(events.map((event) => event.type)).toEqual(["conversation.updated"]);
    expect(events[0]?.data).toEqual({ conversation: await getConversation(client, conversation.id) });
  });

  it("records conversation.updated for a PATCH between open and pending", async () => {
    const { org, client, contact } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id });

    const events = await eventsDuring(org.id, () => patch(client, conversation.id, { status: "pending" }));

    expect(events.map((event) => event.type)).toEqual(["conversation.updated"]);
    expect(events[0]?.data).toEqual({ conversation: await getConversation(client, conversation.id) });
  });

  it("records conversation.updated and conversation.closed for a PATCH to closed", async () => {
    const { org, client, contact, channel } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id, channel_id: channel.id });

    const events = await eventsDuring(org.id, () => patch(client, conversation.id, { status: "closed" }));

    const fetched = await getConversation(client, conversation.id);
    expect(fetched.closed_at).toMatch(TIMESTAMP);
    expect(events.map((event) => event.type)).toEqual(["conversation.updated", "conversation.closed"]);
    expect(events.map((event) => event.data)).toEqual([{ conversation: fetched }, { conversation: fetched }]);
  });

  it("records conversation.updated and conversation.reopened for a PATCH away from closed", async () => {
    const { org, client, contact } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id });
    await action(client, conversation.id, "close");

    const events = await eventsDuring(org.id, () => patch(client, conversation.id, { status: "pending" }));

    const fetched = await getConversation(client, conversation.id);
    expect(events.map((event) => event.type)).toEqual(["conversation.updated", "conversation.reopened"]);
    expect(events.map((event) => event.data)).toEqual([{ conversation: fetched }, { conversation: fetched }]);
  });

  it("records only conversation.updated for a PATCH to closed of a closed conversation", async () => {
    const { org, client, contact } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id });
    await action(client, conversation.id, "close");

    const events = await eventsDuring(org.id, () => patch(client, conversation.id, { status: "closed" }));

    expect(events.map((event) => event.type)).toEqual(["conversation.updated"]);
  });

  it("records conversation.closed for close, and nothing for closing again", async () => {
    const { org, client, contact, channel } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id, channel_id: channel.id });

    const closing = await eventsDuring(org.id, () => action(client, conversation.id, "close"));
    const again = await eventsDuring(org.id, () => action(client, conversation.id, "close"));

    expect(closing.map((event) => event.type)).toEqual(["conversation.closed"]);
    expect(closing[0]?.data).toEqual({ conversation: await getConversation(client, conversation.id) });
    expect(again).toEqual([]);
  });

  it("records conversation.reopened for reopen", async () => {
    const { org, client, contact, channel } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id, channel_id: channel.id });
    await action(client, conversation.id, "close");

    const events = await eventsDuring(org.id, () => action(client, conversation.id, "reopen"));

    expect(events.map((event) => event.type)).toEqual(["conversation.reopened"]);
    expect(events[0]?.data).toEqual({ conversation: await getConversation(client, conversation.id) });
  });

  it("records conversation.assigned for assign and for unassign", async () => {
    const { org, client, contact, channel } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id, channel_id: channel.id });
    const agent = await createAgent(org.id);
    const team = await createTeam(client);

    const assigning = await eventsDuring(org.id, () =>
      action(client, conversation.id, "assign", { user_id: agent.id, team_id: team.id }),
    );
    const assigned = await getConversation(client, conversation.id);
    const unassigning = await eventsDuring(org.id, () => action(client, conversation.id, "unassign"));
    const unassigned = await getConversation(client, conversation.id);

    expect(assigning.map((event) => event.type)).toEqual(["conversation.assigned"]);
    expect(assigning[0]?.data).toEqual({ conversation: assigned });
    expect(assigned).toMatchObject({ assigned_to: agent.id, team_id: team.id });
    expect(unassigning.map((event) => event.type)).toEqual(["conversation.assigned"]);
    expect(unassigning[0]?.data).toEqual({ conversation: unassigned });
    expect(unassigned).toMatchObject({ assigned_to: null, team_id: team.id });
  });

  it("records no event for refused operations", async () => {
    const { org, client, contact } = await setupWithContact();
    const conversation = await createConversation(client, { contact_id: contact.id });
    const other = await setup();
    const foreignAgent = await createAgent(other.org.id);

    const events = await eventsDuring(org.id, async () => {
      await client.post("/conversations", { body: { contact_id: UNKNOWN.contact } });
      await client.post("/conversations", { body: { contact_id: contact.id, channel_id: UNKNOWN.channel } });
      await client.patch(`/conversations/${conversation.id}`, { body: { status: "archived" } });
      await client.post(`/conversations/${conversation.id}/reopen`);
      await client.post(`/conversations/${conversation.id}/assign`, { body: { user_id: foreignAgent.id } });
      await client.post(`/conversations/${conversation.id}/assign`, { body: {} });
    });

    expect(events).toEqual([]);
  });

  it("records events in the key's environment", async () => {
    const { org, live } = await setup();
    const contact = await createContact(live);

    const events = await eventsDuring(
      org.id,
      async () => {
        const conversation = await createConversation(live, { contact_id: contact.id });
        await action(live, conversation.id, "close");
      },
      "live",
    );

    expect(events.map((event) => event.type)).toEqual(["conversation.created", "conversation.closed"]);
    expect(events.every((event) => event.environment === "live")).toBe(true);
    expect((await eventsOf(org.id, "test")).map((event) => event.type)).toEqual([]);
  });
});

describe("deleting the contact", () => {
  it("removes its conversations and their notes", async () => {
    const { client, contact, channel } = await setupWithContact();
    const keptContact = await createContact(client);
    const first = await createConversation(client, { contact_id: contact.id, channel_id: channel.id });
    const second = await createConversation(client, { contact_id: contact.id, external_id: "ticket-1" });
    const kept = await createConversation(client, { contact_id: keptContact.id });
    for (const id of [first.id, second.id, kept.id]) {
      expect((await client.post(`/conversations/${id}/notes`, { body: { body: "Internal" } })).status).toBe(201);
    }

    const deleted = await client.delete(`/contacts/${contact.id}`);

    expect(deleted.status).toBe(200);
    for (const id of [first.id, second.id]) {
      expectError(await client.get(`/conversations/${id}`), 404, "resource_not_found");
      expectError(await client.get(`/conversations/${id}/notes`), 404, "resource_not_found");
    }
    expect(await listIds(client)).toEqual([kept.id]);
    const orphans = await api.client.sql<{ count: number }[]>`
      select count(*)::int as count from notes where conversation_id in (${first.id}, ${second.id})`;
    expect(orphans[0]?.count).toBe(0);
    expect((await client.get(`/conversations/${kept.id}/notes`)).body.data).toHaveLength(1);
    const reused = await client.post("/conversations", {
      body: { contact_id: keptContact.id, external_id: "ticket-1" },
    });
    expect(reused.status).toBe(201);
  });

  it("never fails with 500 when the contact is deleted while conversations are being created", async () => {
    const { client } = await setup();
    for (let round = 0; round < 12; round++) {
      const contact = await createContact(client);

      const [created, deleted, found] = await Promise.all([
        client.post("/conversations", { body: { contact_id: contact.id } }),
        client.delete(`/contacts/${contact.id}`),
        client.post("/conversations", { body: { contact_id: contact.id, external_id: `race-${round}` } }),
      ]);

      expect(deleted.status).toBe(200);
      for (const response of [created, found]) {
        expect([201, 404], JSON.stringify(response.body)).toContain(response.status);
        if (response.status === 404) expect(response.body.error.param).toBe("contact_id");
        if (response.status === 201) {
          expectError(await client.get(`/conversations/${response.body.id}`), 404, "resource_not_found");
        }
      }
    }
    expect(await listIds(client)).toEqual([]);
  });
});
