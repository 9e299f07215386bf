import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { as, createTestOrganization, expectError, useTestApi } from "../../test/harness.js";
import { openStream, startSession, visitor, webchatChannel } from "../../test/webchat-helpers.js";
import { createApiKey } from "../organizations/api-keys.js";
import { createUser } from "../organizations/organizations.js";

const api = useTestApi();
/** A second API process on the same database, as behind a load balancer. */
const other = useTestApi();

/** A visitor who has written once, and the conversation the business sees. */
async function visitorConversation(key: string) {
  const channelId = await webchatChannel(api, key);
  const token = await startSession(api, channelId);
  const sent = await visitor(api, token).post("/session/messages", { text: "Hello?" });
  expect(sent.status).toBe(201);
  const message = await as(api, key).get(`/messages/${sent.body.id}`);
  return { channelId, token, conversationId: message.body.conversation_id as string };
}

/** The `typing` events of a stream's text, in order. */
function typingEvents(text: string): { typing: boolean; agent_name: string | null }[] {
  return [...text.matchAll(/event: typing\ndata: (.*)\n/g)].map((match) => JSON.parse(match[1] ?? "{}"));
}

describe("POST /v1/conversations/{id}/typing", () => {
  it("shows typing dots with the assigned agent's name on the visitor's stream, until the reply arrives", async () => {
    const org = await createTestOrganization(api);
    const client = as(api, org.test);
    const { token, conversationId } = await visitorConversation(org.test);
    const agent = await createUser(api.context.db, {
      organizationId: org.id,
      name: "Ana Agent",
      email: `${randomUUID()}@example.com`,
    });
    expect((await client.post(`/conversations/${conversationId}/assign`, { body: { user_id: agent.id } })).status).toBe(
      200,
    );
    const stream = await openStream(api, token);
    try {
      const started = Date.now();
      const typing = await client.post(`/conversations/${conversationId}/typing`);
      expect(typing.status).toBe(200);
      expect(typing.body).toMatchObject({ object: "typing_indicator", conversation_id: conversationId, typing: true });
      const expiresIn = Date.parse(typing.body.expires_at) - started;
      expect(expiresIn).toBeGreaterThan(3_000);
      expect(expiresIn).toBeLessThan(10_000);
      await stream.readUntil((text) => typingEvents(text).length === 1);
      expect(typingEvents(stream.received)).toEqual([{ typing: true, agent_name: "Ana Agent" }]);

      // The reply it announced: the message, with the agent's name, and the dots go at once.
      const reply = await client.post("/messages", {
        body: { conversation_id: conversationId, type: "text", text: "Here I am" },
      });
      expect(reply.status).toBe(201);
      await stream.readUntil((text) => typingEvents(text).length === 2, 4_000);
      expect(typingEvents(stream.received)[1]).toEqual({ typing: false, agent_name: "Ana Agent" });
      expect(stream.received).toMatch(/event: message\ndata: .*"agent_name":"Ana Agent"/);
      const history = await visitor(api, token).get("/session/messages");
      expect(history.body.find((message: { id: string }) => message.id === reply.body.id)).toMatchObject({
        agent_name: "Ana Agent",
        text: "Here I am",
      });

      // A new signal shows again; `typing: false` stops it.
      await client.post(`/conversations/${conversationId}/typing`, { body: { typing: true } });
      await stream.readUntil((text) => typingEvents(text).length === 3);
      const stopped = await client.post(`/conversations/${conversationId}/typing`, { body: { typing: false } });
      expect(stopped.body).toMatchObject({ typing: false, expires_at: null });
      await stream.readUntil((text) => typingEvents(text).length === 4);
      expect(typingEvents(stream.received).map((event) => event.typing)).toEqual([true, false, true, false]);
    } finally {
      stream.close();
    }
  });

  it("expires after a few seconds without a repeat", async () => {
    const org = await createTestOrganization(api);
    const { token, conversationId } = await visitorConversation(org.test);
    const stream = await openStream(api, token);
    try {
      await as(api, org.test).post(`/conversations/${conversationId}/typing`);
      await stream.readUntil((text) => typingEvents(text).length === 1);
      const shown = Date.now();
      await stream.readUntil((text) => typingEvents(text).length === 2, 10_000);
      expect(typingEvents(stream.received)).toEqual([
        { typing: true, agent_name: null },
        { typing: false, agent_name: null },
      ]);
      expect(Date.now() - shown).toBeGreaterThan(2_000);
    } finally {
      stream.close();
    }
  });

  it("reaches a visitor whose stream another API process serves", async () => {
    const org = await createTestOrganization(api);
    const { token, conversationId } = await visitorConversation(org.test);
    const stream = await openStream(other, token);
    try {
      expect((await as(api, org.test).post(`/conversations/${conversationId}/typing`)).status).toBe(200);
      await stream.readUntil((text) => typingEvents(text).length === 1);
      expect(typingEvents(stream.received)).toEqual([{ typing: true, agent_name: null }]);
    } finally {
      stream.close();
    }
  });

  it("needs messages:write, and is 404 for another organization's or environment's conversation", async () => {
    const org = await createTestOrganization(api);
    const other = await createTestOrganization(api);
    const { conversationId } = await visitorConversation(org.test);
    const readOnly = await createApiKey(api.context.db, {
      organizationId: org.id,
      environment: "test",
      scopes: ["conversations:read", "conversations:write", "messages:read"],
    });
    const refused = await as(api, readOnly.key).post(`/conversations/${conversationId}/typing`);
    expectError(refused, 403, "insufficient_scope");
    expect(refused.body.error.message).toContain("messages:write");
    for (const key of [other.test, org.live]) {
      expectError(await as(api, key).post(`/conversations/${conversationId}/typing`), 404, "resource_not_found");
    }
    expectError(await as(api, org.test).post("/conversations/conv_nope/typing"), 404, "resource_not_found");
  });

  it("is 409 invalid_state on a conversation of another channel type or without a channel, 422 for a bad body", async () => {
    const org = await createTestOrganization(api);
    const client = as(api, org.test);
    const contact = await client.post("/contacts", { body: { name: "Someone", phone: "+15550100" } });
    const channels = await client.get("/channels", { query: { type: "whatsapp" } });
    const whatsapp = await client.post("/conversations", {
      body: { contact_id: contact.body.id, channel_id: channels.body.data[0].id },
    });
    const manual = await client.post("/conversations", { body: { contact_id: contact.body.id } });
    for (const conversation of [whatsapp, manual]) {
      expect(conversation.status).toBe(201);
      expectError(await client.post(`/conversations/${conversation.body.id}/typing`), 409, "invalid_state");
    }
    const { conversationId } = await visitorConversation(org.test);
    const bad = await client.post(`/conversations/${conversationId}/typing`, { body: { typing: "yes" } });
    expectError(bad, 422, "validation_error", "typing");
    const unknown = await client.post(`/conversations/${conversationId}/typing`, { body: { typng: true } });
    expectError(unknown, 422, "validation_error", "typng");
  });
});
