import { describe, expect, it } from "vitest";
import { as, call, createTestOrganization, eventually, useTestApi } from "../../test/harness.js";
import { connectChannel } from "../channels/service.js";

const api = useTestApi();

async function webchatChannel(key: string) {
  const channels = await as(api, key).get("/channels", { query: { type: "webchat" } });
  return channels.body.data[0].id as string;
}

function visitor(token?: string) {
  const send = (method: string) => (path: string, body?: unknown) =>
    call(api, method, `/webchat${path}`, {
      ...(body === undefined ? {} : { body }),
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
  return { get: send("GET"), post: send("POST") };
}

async function startSession(channelId: string, body: unknown = {}) {
  const response = await visitor().post(`/channels/${channelId}/sessions`, body);
  expect(response.status).toBe(201);
  return response.body.token as string;
}

/** The conversation the business sees for a visitor's message (the visitor is never told its id). */
async function conversationOfMessage(key: string, messageId: string) {
  const message = await as(api, key).get(`/messages/${messageId}`);
  return message.body.conversation_id as string;
}

async function eventTypes(organizationId: string) {
  const rows = await api.client.sql<{ type: string }[]>`
    select type from events where organization_id = ${organizationId} order by id`;
  return rows.map((row) => row.type);
}

describe("web chat visitor sessions", () => {
  it("creates a session with a visitor token for a web chat channel", async () => {
    const org = await createTestOrganization(api);
    const channelId = await webchatChannel(org.test);
    const response = await visitor().post(`/channels/${channelId}/sessions`, { name: "Ada" });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ object: "webchat_session", channel_id: channelId });
    expect(response.body.id).toMatch(/^wcs_[0-9A-Z]{26}$/);
    expect(response.body.token).toMatch(/^wct_[0-9A-Za-z]{40}$/);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
  });

  it("refuses an unknown channel and a channel of another type with 404", async () => {
    const org = await createTestOrganization(api);
    const channels = await as(api, org.test).get("/channels", { query: { type: "whatsapp" } });
    for (const channelId of ["chn_unknown", channels.body.data[0].id]) {
      const response = await visitor().post(`/channels/${channelId}/sessions`, {});
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe("resource_not_found");
    }
  });

  it("refuses unknown body fields with 422", async () => {
    const org = await createTestOrganization(api);
    const response = await visitor().post(`/channels/${await webchatChannel(org.test)}/sessions`, { admin: true });
    expect(response.status).toBe(422);
    expect(response.body.error.code).toBe("validation_error");
  });

  it("answers a missing token 401 authentication_required and a wrong one 401 invalid_api_key", async () => {
    expect((await visitor().get("/session/messages")).body.error.code).toBe("authentication_required");
    const wrong = await visitor(`wct_${"a".repeat(40)}`).get("/session/messages");
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe("invalid_api_key");
  });

  it("answers the browser's CORS preflight", async () => {
    const response = await fetch(`${api.baseUrl}/webchat/session/messages`, { method: "OPTIONS" });
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-headers")).toContain("authorization");
  });
});

describe("web chat visitor messages", () => {
  it("creates the contact and the conversation with the first message, then reuses them", async () => {
    const org = await createTestOrganization(api);
    const channelId = await webchatChannel(org.test);
    const token = await startSession(channelId, { name: "Grace", email: "grace@example.com" });
    const first = await visitor(token).post("/session/messages", { text: "Hello" });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ direction: "inbound", type: "text", text: "Hello", status: null });
    const second = await visitor(token).post("/session/messages", { text: "Anyone?" });
    const conversationId = await conversationOfMessage(org.test, first.body.id);
    expect(await conversationOfMessage(org.test, second.body.id)).toBe(conversationId);

    const client = as(api, org.test);
    const conversation = await client.get(`/conversations/${conversationId}`);
    expect(conversation.body).toMatchObject({ channel_id: channelId, channel_type: "webchat", status: "open" });
    const contact = await client.get(`/contacts/${conversation.body.contact_id}`);
    expect(contact.body).toMatchObject({ name: "Grace", email: "grace@example.com" });
    expect(await eventTypes(org.id)).toEqual([
      "contact.created",
      "conversation.created",
      "message.received",
      "message.received",
    ]);
  });

  it("lists the conversation so far, oldest first, both directions", async () => {
    const org = await createTestOrganization(api);
    const token = await startSession(await webchatChannel(org.test));
    const inbound = await visitor(token).post("/session/messages", { text: "Question" });
    const reply = await as(api, org.test).post("/messages", {
      body: { conversation_id: await conversationOfMessage(org.test, inbound.body.id), type: "text", text: "Answer" },
    });
    const history = await visitor(token).get("/session/messages");
    expect(history.body.map((message: { id: string }) => message.id)).toEqual([inbound.body.id, reply.body.id]);
  });

  it("keeps each visitor to their own conversation", async () => {
    const org = await createTestOrganization(api);
    const channelId = await webchatChannel(org.test);
    const first = await startSession(channelId);
    const second = await startSession(channelId);
    const a = await visitor(first).post("/session/messages", { text: "a" });
    const b = await visitor(second).post("/session/messages", { text: "b" });
    expect(await conversationOfMessage(org.test, a.body.id)).not.toBe(await conversationOfMessage(org.test, b.body.id));
    expect((await visitor(second).get("/session/messages")).body.map((m: { text: string }) => m.text)).toEqual(["b"]);
  });
});

describe("web chat receipts", () => {
  /** This API's `parley_messages_total` for web chat and a status (metrics). */
  async function counted(status: string): Promise<number> {
    const metric = api.context.metrics?.registry.getSingleMetric("parley_messages_total");
    const values = (await metric?.get())?.values ?? [];
    return (
      values.find((value) => value.labels.channel_type === "webchat" && value.labels.status === status)?.value ?? 0
    );
  }

  async function conversationWithReply() {
    const org = await createTestOrganization(api);
    const token = await startSession(await webchatChannel(org.test));
    const inbound = await visitor(token).post("/session/messages", { text: "Hi" });
    const reply = await as(api, org.test).post("/messages", {
      body: { conversation_id: await conversationOfMessage(org.test, inbound.body.id), type: "text", text: "Hello" },
    });
    return { org, token, inbound: inbound.body, reply: reply.body };
  }

  it("moves a reply to delivered, then read, recording message.delivered and message.read", async () => {
    const { org, token, reply } = await conversationWithReply();
    const before = { delivered: await counted("delivered"), read: await counted("read") };
    const delivered = await visitor(token).post("/session/receipts", { message_id: reply.id, status: "delivered" });
    expect(delivered.status).toBe(204);
    expect((await as(api, org.test).get(`/messages/${reply.id}`)).body.status).toBe("delivered");
    await visitor(token).post("/session/receipts", { message_id: reply.id, status: "read" });
    expect((await as(api, org.test).get(`/messages/${reply.id}`)).body.status).toBe("read");
    expect(
      (await eventTypes(org.id)).filter((type) => type.startsWith("message.") && type !== "message.received"),
    ).toEqual(["message.delivered", "message.read"]);
    expect(await counted("delivered")).toBe(before.delivered + 1);
    expect(await counted("read")).toBe(before.read + 1);
  });

  it("never moves a read reply back to delivered", async () => {
    const { org, token, reply } = await conversationWithReply();
    const before = { delivered: await counted("delivered"), read: await counted("read") };
    await visitor(token).post("/session/receipts", { message_id: reply.id, status: "read" });
    await visitor(token).post("/session/receipts", { message_id: reply.id, status: "delivered" });
    expect((await as(api, org.test).get(`/messages/${reply.id}`)).body.status).toBe("read");
    // A receipt that changes nothing counts nothing.
    expect(await counted("read")).toBe(before.read + 1);
    expect(await counted("delivered")).toBe(before.delivered);
  });

  it("refuses a receipt for the visitor's own message or another conversation's message with 404", async () => {
    const { token, inbound } = await conversationWithReply();
    const other = await conversationWithReply();
    for (const messageId of [inbound.id, other.reply.id]) {
      const response = await visitor(token).post("/session/receipts", { message_id: messageId, status: "read" });
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe("resource_not_found");
    }
  });
});

describe("web chat reply stream", () => {
  it("streams the agents' replies as server-sent events", async () => {
    const org = await createTestOrganization(api);
    const token = await startSession(await webchatChannel(org.test));
    const inbound = await visitor(token).post("/session/messages", { text: "Hi" });
    const controller = new AbortController();
    const stream = await fetch(`${api.baseUrl}/webchat/session/events?token=${token}`, { signal: controller.signal });
    expect(stream.headers.get("content-type")).toContain("text/event-stream");
    const reply = await as(api, org.test).post("/messages", {
      body: { conversation_id: await conversationOfMessage(org.test, inbound.body.id), type: "text", text: "Streamed" },
    });
    const reader = stream.body?.getReader();
    let received = "";
    await eventually(
      async () => {
        const chunk = await reader?.read();
        received += new TextDecoder().decode(chunk?.value ?? new Uint8Array());
        return received;
      },
      (text) => text.includes(`id: ${reply.body.id}`),
    );
    controller.abort();
    const data = /data: (.*)\n/.exec(received.slice(received.indexOf(`id: ${reply.body.id}`)))?.[1] ?? "{}";
    expect(JSON.parse(data)).toMatchObject({ id: reply.body.id, direction: "outbound", text: "Streamed" });
    expect(received).not.toContain(inbound.body.id);
  });
});

describe("the widget page", () => {
  it("is served for a web chat channel and 404 for anything else", async () => {
    const org = await createTestOrganization(api);
    const channelId = await webchatChannel(org.test);
    const root = api.baseUrl.replace(/\/v1$/, "");
    const page = await fetch(`${root}/webchat/${channelId}`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(await page.text()).toContain(channelId);
    const live = await connectChannel(api.context.db, api.context.secretBox, {
      organizationId: org.id,
      environment: "live",
      type: "email",
      name: "Support email",
      provider: "smtp",
      settings: { address: "support@example.com", smtp_url: "smtp://127.0.0.1:2525" },
    });
    expect((await fetch(`${root}/webchat/${live.id}`)).status).toBe(404);
  });
});
