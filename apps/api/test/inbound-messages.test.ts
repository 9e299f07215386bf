import { describe, expect, it } from "vitest";
import { createApiKey } from "../src/organizations/api-keys.js";
import {
  type Client,
  getConversation,
  messageEvents,
  openConversation,
  type RecordedEvent,
  receiveText,
  testClient,
} from "./delivery-helpers.js";
import { download, makeImage, makePdf, upload } from "./files.js";
import { as, useTestApi } from "./harness.js";

/**
 * POST /v1/test-helpers/inbound-messages: a message from the contact, recorded through
 * the ingestion path of a real channel. Inbound messages are never delivered, so this
 * file needs no worker and runs on the shared database.
 */
const api = useTestApi();

const UNKNOWN_CONVERSATION = "conv_01ARZ3NDEKTSV4RRFFQ69G5FAV";

function postInbound(client: Client, body: Record<string, unknown>) {
  return client.post("/test-helpers/inbound-messages", { body });
}

/** The events that name this conversation, oldest first. */
async function conversationEvents(conversationId: string): Promise<RecordedEvent[]> {
  return api.client.sql<RecordedEvent[]>`
    select id, type, data from events where data->'conversation'->>'id' = ${conversationId} order by created_at, id`;
}

async function messagesOf(client: Client, conversationId: string) {
  const response = await client.get(`/conversations/${conversationId}/messages`);
  expect(response.status).toBe(200);
  return response.body.data;
}

async function uploadPng(key: string) {
  const bytes = await makeImage("png", { width: 32, height: 32 });
  const response = await upload(api, key, { bytes, type: "image/png", filename: "photo.png" });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

describe("who may simulate an inbound message", () => {
  it("is a route only for test keys: a live key gets 404 route_not_found", async () => {
    const { org } = await testClient(api);
    const response = await postInbound(as(api, org.live), {
      conversation_id: UNKNOWN_CONVERSATION,
      type: "text",
      text: "Hi",
    });
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe("route_not_found");
  });

  it("needs the messages:write scope", async () => {
    const { org, client } = await testClient(api);
    const conversation = await openConversation(client, "messenger");
    const readOnly = await createApiKey(api.context.db, {
      organizationId: org.id,
      environment: "test",
      scopes: ["messages:read", "conversations:read"],
    });
    const response = await postInbound(as(api, readOnly.key), {
      conversation_id: conversation.id,
      type: "text",
      text: "Hi",
    });
    expect(response.status).toBe(403);
    expect(response.body.error.code).toBe("insufficient_scope");
    expect(response.body.error.message).toContain("messages:write");
    expect(await messagesOf(client, conversation.id)).toEqual([]);
  });

  it("answers 404 resource_not_found for a conversation of another organization", async () => {
    const { client: owner } = await testClient(api);
    const conversation = await openConversation(owner, "messenger");
    const { client: stranger } = await testClient(api);
    const response = await postInbound(stranger, { conversation_id: conversation.id, type: "text", text: "Hi" });
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe("resource_not_found");
    expect(await messagesOf(owner, conversation.id)).toEqual([]);
  });
});

describe("recording a message from the contact", () => {
  it("records a text as inbound with status null, as GET returns it", async () => {
    const { client } = await testClient(api);
    const conversation = await openConversation(client, "messenger");
    const response = await postInbound(client, {
      conversation_id: conversation.id,
      type: "text",
      text: "Where is my order?",
    });

    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({
      object: "message",
      conversation_id: conversation.id,
      direction: "inbound",
      type: "text",
      text: "Where is my order?",
      attachment: null,
      status: null,
      error: null,
    });
    expect((await client.get(`/messages/${response.body.id}`)).body).toEqual(response.body);
    expect(await messagesOf(client, conversation.id)).toEqual([response.body]);
  });

  it("emits message.received with the message and the conversation, and no other message event", async () => {
    const { client } = await testClient(api);
    const conversation = await openConversation(client, "whatsapp");
    const message = await receiveText(client, conversation.id, "Hello?");

    const events = await messageEvents(api, message.id);
    expect(events.map((event) => event.type)).toEqual(["message.received"]);
    expect(events[0]?.data).toEqual({ message, conversation: await getConversation(client, conversation.id) });
  });

  it("leaves an open conversation open, without conversation.reopened", async () => {
    const { client } = await testClient(api);
    const conversation = await openConversation(client, "messenger");
    await receiveText(client, conversation.id);

    expect((await getConversation(client, conversation.id)).status).toBe("open");
    expect((await conversationEvents(conversation.id)).map((event) => event.type)).not.toContain(
      "conversation.reopened",
    );
  });

  it("reopens a closed conversation, with conversation.reopened before message.received", async () => {
    const { client } = await testClient(api);
    const conversation = await openConversation(client, "messenger");
    const closed = await client.post(`/conversations/${conversation.id}/close`);
    expect(closed.status).toBe(200);
    expect(closed.body.status).toBe("closed");
    const before = (await conversationEvents(conversation.id)).length;

    const message = await receiveText(client, conversation.id, "One more thing");
    const reopened = await getConversation(client, conversation.id);
    expect(reopened).toMatchObject({ status: "open", closed_at: null });
    const events = (await conversationEvents(conversation.id)).slice(before);
    expect(events.map((event) => event.type)).toEqual(["conversation.reopened", "message.received"]);
    expect(events[0]?.data).toEqual({ conversation: reopened });
    expect(events[1]?.data).toEqual({ message, conversation: reopened });
  });

  it("reopens a closed conversation once when several messages arrive at the same time", async () => {
    const { client } = await testClient(api);
    const conversation = await openConversation(client, "messenger");
    expect((await client.post(`/conversations/${conversation.id}/close`)).status).toBe(200);
    const before = (await conversationEvents(conversation.id)).length;

    const texts = ["One", "Two", "Three", "Four", "Five"];
    await Promise.all(texts.map((text) => receiveText(client, conversation.id, text)));
    const events = (await conversationEvents(conversation.id)).slice(before);
    expect(events.filter((event) => event.type === "conversation.reopened")).toHaveLength(1);
    expect(events.filter((event) => event.type === "message.received")).toHaveLength(texts.length);
    expect(events[0]?.type).toBe("conversation.reopened");
    expect(await getConversation(client, conversation.id)).toMatchObject({ status: "open", closed_at: null });
  });

  it("records a media message with an uploaded file, downloadable from its attachment url", async () => {
    const { org, client } = await testClient(api);
    const conversation = await openConversation(client, "whatsapp");
    const file = await uploadPng(org.test);

    const response = await postInbound(client, {
      conversation_id: conversation.id,
      type: "image",
      text: "A photo of the damage",
      attachment_id: file.id,
    });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    expect(response.body).toMatchObject({
      direction: "inbound",
      type: "image",
      text: "A photo of the damage",
      status: null,
      attachment: { id: file.id, content_type: file.content_type, size: file.size },
    });
    expect(response.body.attachment.url).toBe(`${api.baseUrl}/attachments/${file.id}/content`);
    const content = await download(org.test, response.body.attachment.url);
    expect(content.status).toBe(200);
    expect(content.bytes.length).toBe(file.size);
    const [event] = await messageEvents(api, response.body.id);
    expect(event?.data.message).toEqual(response.body);
  });
});

describe("the content rules of a send apply", () => {
  it("refuses media on web chat with 422 unsupported_message_type, storing nothing", async () => {
    const { org, client } = await testClient(api);
    const conversation = await openConversation(client, "webchat");
    const file = await uploadPng(org.test);
    const events = await conversationEvents(conversation.id);

    const response = await postInbound(client, {
      conversation_id: conversation.id,
      type: "image",
      attachment_id: file.id,
    });
    expect(response.status).toBe(422);
    expect(response.body.error).toMatchObject({ code: "unsupported_message_type", param: "type" });
    expect(await messagesOf(client, conversation.id)).toEqual([]);
    expect(await conversationEvents(conversation.id)).toEqual(events);
  });

  it("refuses a template with 422 unsupported_message_type", async () => {
    const { client } = await testClient(api);
    const conversation = await openConversation(client, "whatsapp");
    const response = await postInbound(client, { conversation_id: conversation.id, type: "template", text: "Hi" });
    expect(response.status).toBe(422);
    expect(response.body.error.code).toBe("unsupported_message_type");
    expect(await messagesOf(client, conversation.id)).toEqual([]);
  });

  it("refuses a file of another kind than the type with 422 attachment_type_mismatch", async () => {
    const { org, client } = await testClient(api);
    const conversation = await openConversation(client, "whatsapp");
    const pdf = await upload(api, org.test, { bytes: makePdf(), type: "application/pdf", filename: "invoice.pdf" });
    expect(pdf.status).toBe(201);

    const response = await postInbound(client, {
      conversation_id: conversation.id,
      type: "image",
      attachment_id: pdf.body.id,
    });
    expect(response.status).toBe(422);
    expect(response.body.error.code).toBe("attachment_type_mismatch");
    expect(await messagesOf(client, conversation.id)).toEqual([]);
  });

  it("answers 404 resource_not_found for an unknown conversation", async () => {
    const { client } = await testClient(api);
    const response = await postInbound(client, { conversation_id: UNKNOWN_CONVERSATION, type: "text", text: "Hi" });
    expect(response.status).toBe(404);
    expect(response.body.error).toMatchObject({ code: "resource_not_found", param: "conversation_id" });
  });
});
