import { randomBytes, randomUUID } from "node:crypto";
import { newId } from "@parley/db";
import { type ChannelType, channelTypes } from "@parley/schema";
import { describe, expect, it } from "vitest";
import { download, makeImage, makePdf, upload } from "../../test/files.js";
import {
  as,
  type Client,
  expectError,
  expectValidationError,
  setupOrganization,
  TIMESTAMP,
  useTestApi,
  walkList,
} from "../../test/harness.js";
import { createApiKey } from "../organizations/api-keys.js";

const api = useTestApi();

const MESSAGE_ID = /^msg_[0-9A-HJKMNP-TV-Z]{26}$/;
const UNKNOWN = {
  conversation: "conv_01ARZ3NDEKTSV4RRFFQ69G5FAV",
  message: "msg_01ARZ3NDEKTSV4RRFFQ69G5FAV",
  attachment: "att_01ARZ3NDEKTSV4RRFFQ69G5FAV",
};
const MEDIA_TYPES = ["image", "video", "audio", "document"] as const;
type MediaType = (typeof MEDIA_TYPES)[number];

/** One file of each kind, with a content type from the accepted table. */
async function fileOf(kind: MediaType) {
  switch (kind) {
    case "image":
      return { bytes: await makeImage("png", { width: 64, height: 48 }), type: "image/png", filename: "photo.png" };
    case "video":
      return { bytes: randomBytes(4096), type: "video/mp4", filename: "clip.mp4" };
    case "audio":
      return { bytes: randomBytes(4096), type: "audio/mpeg", filename: "voice.mp3" };
    case "document":
      return { bytes: makePdf(), type: "application/pdf", filename: "invoice.pdf" };
  }
}

const setup = () => setupOrganization(api);

async function sandboxChannel(client: Client, type: ChannelType) {
  const response = await client.get("/channels", { query: { type } });
  expect(response.status).toBe(200);
  expect(response.body.data).toHaveLength(1);
  return response.body.data[0];
}

/** A new contact and a conversation on the sandbox channel of `type`, or a manual record with `null`. */
async function conversationOn(client: Client, type: ChannelType | null) {
  // An SMS goes to a phone: a contact without one is refused before anything is stored.
  const phone = type === "sms" ? { phone: "+14155550100" } : {};
  const contact = await client.post("/contacts", { body: { name: "Grace", ...phone } });
  expect(contact.status).toBe(201);
  const channelId = type ? (await sandboxChannel(client, type)).id : undefined;
  const conversation = await client.post("/conversations", {
    body: { contact_id: contact.body.id, ...(channelId ? { channel_id: channelId } : {}) },
  });
  expect(conversation.status, JSON.stringify(conversation.body)).toBe(201);
  return { contact: contact.body, conversation: conversation.body };
}

async function uploadOf(key: string, kind: MediaType) {
  const response = await upload(api, key, await fileOf(kind));
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

async function send(client: Client, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const response = await client.post("/messages", { body, headers });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

async function sendText(client: Client, conversationId: string, text = "Hello") {
  return send(client, { conversation_id: conversationId, type: "text", text });
}

async function listIds(client: Client, conversationId: string, query: Record<string, string | number> = {}) {
  const response = await client.get(`/conversations/${conversationId}/messages`, { query: { limit: 100, ...query } });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.data.map((message: { id: string }) => message.id);
}

async function outboxRows(messageId: string) {
  return api.client.sql<
    { message_id: string }[]
  >`select message_id from message_outbox where message_id = ${messageId}`;
}

async function outboxCountOf(conversationId: string): Promise<number> {
  const [row] = await api.client.sql<{ count: number }[]>`
    select count(*)::int as count from message_outbox o
    join messages m on m.id = o.message_id where m.conversation_id = ${conversationId}`;
  return row?.count ?? -1;
}

async function messageCountOf(organizationId: string): Promise<number> {
  const [row] = await api.client.sql<{ count: number }[]>`
    select count(*)::int as count from messages where organization_id = ${organizationId}`;
  return row?.count ?? -1;
}

/** Everything a send could touch in a conversation. */
async function snapshot(client: Client, organizationId: string, conversationId: string) {
  return {
    conversation: (await client.get(`/conversations/${conversationId}`)).body,
    messages: (await client.get(`/conversations/${conversationId}/messages`, { query: { limit: 100 } })).body,
    outbox: await outboxCountOf(conversationId),
    stored: await messageCountOf(organizationId),
    retained: await api.client.sql`
      select id, retained from attachments where organization_id = ${organizationId} order by id`,
  };
}

async function expireAttachment(attachmentId: string) {
  await api.client.sql`update attachments set expires_at = now() - interval '1 second' where id = ${attachmentId}`;
}

async function insertInbound(organizationId: string, conversationId: string, text: string) {
  const id = newId("message");
  await api.client.sql`
    insert into messages (id, organization_id, environment, conversation_id, direction, type, text)
    values (${id}, ${organizationId}, 'test', ${conversationId}, 'inbound', 'text', ${text})`;
  return id;
}

async function setCreatedAt(messageId: string, at: string) {
  await api.client.sql`update messages set created_at = ${at} where id = ${messageId}`;
}

describe("POST /messages: text", () => {
  it("answers 201 with a queued outbound message on a sandbox channel, and GET returns it", async () => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const before = Date.now();

    const response = await client.post("/messages", {
      body: { conversation_id: conversation.id, type: "text", text: "Your order has shipped." },
    });

    expect(response.status, JSON.stringify(response.body)).toBe(201);
    expect(response.body).toEqual({
      object: "message",
      id: expect.stringMatching(MESSAGE_ID),
      conversation_id: conversation.id,
      direction: "outbound",
      type: "text",
      text: "Your order has shipped.",
      attachment: null,
      metadata: {},
      status: "queued",
      error: null,
      authentication: null,
      sms: null,
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect(Date.parse(response.body.created_at)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(response.body.created_at)).toBeLessThanOrEqual(Date.now());
    expect((await client.get(`/messages/${response.body.id}`)).body).toEqual(response.body);
  });

  it("writes exactly one message_outbox row, in the same transaction as the message", async () => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");

    const message = await sendText(client, conversation.id);

    expect(await outboxRows(message.id)).toEqual([{ message_id: message.id }]);
    const written = await api.client.sql<{ source: string; xmin: string }[]>`
      select 'message' as source, xmin::text as xmin from messages where id = ${message.id}
      union all
      select 'outbox', xmin::text from message_outbox where message_id = ${message.id}`;
    expect(written).toHaveLength(2);
    expect(written[0]?.xmin).toBe(written[1]?.xmin);
  });

  it.each(channelTypes)("sends text on the sandbox %s channel with status queued", async (type) => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, type);

    const message = await sendText(client, conversation.id);

    expect(message.status).toBe("queued");
    expect(await outboxRows(message.id)).toHaveLength(1);
  });

  it("stores a message on a manual record with status null and no outbox row", async () => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, null);
    expect(conversation.channel_id).toBeNull();

    const message = await sendText(client, conversation.id, "Called the customer back.");

    expect(message).toMatchObject({ status: null, direction: "outbound", error: null });
    expect(await outboxRows(message.id)).toEqual([]);
    expect((await client.get(`/messages/${message.id}`)).body.status).toBeNull();
  });

  it("stores the metadata as given", async () => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, "email");
    const metadata = { order: "A-1", nested: { ok: true }, count: 3 };

    const message = await send(client, { conversation_id: conversation.id, type: "text", text: "Hi", metadata });

    expect(message.metadata).toEqual(metadata);
    expect((await client.get(`/messages/${message.id}`)).body.metadata).toEqual(metadata);
  });

  it("answers with the message exactly as GET and the list return it, JSON key order included", async () => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const metadata = { zeta: 1, order: "A-1", b: { y: true, x: [{ d: 1, c: 2 }] }, a: null };

    const message = await send(client, { conversation_id: conversation.id, type: "text", text: "Hi", metadata });

    const fetched = await client.get(`/messages/${message.id}`);
    const listed = await client.get(`/conversations/${conversation.id}/messages`);
    const stored = { ...message, status: "queued", updated_at: message.updated_at };
    for (const read of [fetched.body, listed.body.data.find((item: { id: string }) => item.id === message.id)]) {
      // The worker may have moved it on meanwhile: only the status and its time may differ.
      expect(JSON.stringify({ ...read, status: "queued", updated_at: message.updated_at })).toBe(
        JSON.stringify(stored),
      );
    }
  });

  it("accepts text of 4,096 characters and refuses 4,097 naming text", async () => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");

    const longest = await send(client, { conversation_id: conversation.id, type: "text", text: "x".repeat(4096) });
    expect(longest.text).toHaveLength(4096);

    expectValidationError(
      await client.post("/messages", {
        body: { conversation_id: conversation.id, type: "text", text: "x".repeat(4097) },
      }),
      "text",
    );
  });

  it("refuses a text message without text with 422 naming text", async () => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");

    expectValidationError(
      await client.post("/messages", { body: { conversation_id: conversation.id, type: "text" } }),
      "text",
    );
    expectValidationError(
      await client.post("/messages", { body: { conversation_id: conversation.id, type: "text", text: "" } }),
      "text",
    );
  });

  it("refuses a text message with an attachment_id with 422 naming attachment_id", async () => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const attachment = await uploadOf(org.test, "document");

    const response = await client.post("/messages", {
      body: { conversation_id: conversation.id, type: "text", text: "Hi", attachment_id: attachment.id },
    });

    expectValidationError(response, "attachment_id");
  });

  it.each([
    [{ type: "text", text: "Hi" }, "conversation_id"],
    [{ conversation_id: "conv_123", type: "text", text: "Hi" }, "conversation_id"],
    [{ conversation_id: UNKNOWN.conversation, text: "Hi" }, "type"],
    [{ conversation_id: UNKNOWN.conversation, type: "sticker", text: "Hi" }, "type"],
    [{ conversation_id: UNKNOWN.conversation, type: "image", attachment_id: "att_bad" }, "attachment_id"],
    [{ conversation_id: UNKNOWN.conversation, type: "text", text: "Hi", channel: "sms" }, "channel"],
    [{ conversation_id: UNKNOWN.conversation, type: "text", text: 42 }, "text"],
  ])("refuses body %j with 422 naming %s", async (body, param) => {
    const { client } = await setup();

    expectValidationError(await client.post("/messages", { body }), param);
  });
});

describe("POST /messages: refusals by type and channel", () => {
  it.each([...channelTypes, null])("refuses template with 422 unsupported_message_type on %s", async (type) => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, type);

    const response = await client.post("/messages", {
      body: { conversation_id: conversation.id, type: "template", template: { name: "order_update", language: "en" } },
    });

    expectError(response, 422, "unsupported_message_type", "type");
  });

  it.each(MEDIA_TYPES)(
    "refuses %s on web chat with 422 unsupported_message_type, even with a valid attachment",
    async (kind) => {
      const { org, client } = await setup();
      const { conversation } = await conversationOn(client, "webchat");
      const attachment = await uploadOf(org.test, kind);

      const response = await client.post("/messages", {
        body: { conversation_id: conversation.id, type: kind, attachment_id: attachment.id },
      });

      expectError(response, 422, "unsupported_message_type", "type");
    },
  );

  it("refuses a document on Instagram with 422 unsupported_message_type and accepts an image there", async () => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, "instagram");
    const pdf = await uploadOf(org.test, "document");
    const image = await uploadOf(org.test, "image");

    const refused = await client.post("/messages", {
      body: { conversation_id: conversation.id, type: "document", attachment_id: pdf.id },
    });

    expectError(refused, 422, "unsupported_message_type", "type");
    const sent = await send(client, { conversation_id: conversation.id, type: "image", attachment_id: image.id });
    expect(sent.status).toBe("queued");
  });

  it("checks the channel before the attachment: media on web chat without attachment_id is unsupported_message_type", async () => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, "webchat");

    const response = await client.post("/messages", { body: { conversation_id: conversation.id, type: "image" } });

    expectError(response, 422, "unsupported_message_type", "type");
  });

  it.each(MEDIA_TYPES)("refuses %s without attachment_id with 422 naming attachment_id", async (kind) => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");

    const response = await client.post("/messages", {
      body: { conversation_id: conversation.id, type: kind, text: "caption" },
    });

    expectValidationError(response, "attachment_id");
  });
});

describe("POST /messages: media", () => {
  it("sends an image with a caption: 201 with the attachment and its absolute content url", async () => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const attachment = await uploadOf(org.test, "image");

    const message = await send(client, {
      conversation_id: conversation.id,
      type: "image",
      attachment_id: attachment.id,
      text: "The parcel, as delivered",
    });

    expect(message).toMatchObject({
      type: "image",
      text: "The parcel, as delivered",
      status: "queued",
      direction: "outbound",
      error: null,
    });
    expect(message.attachment).toEqual(attachment);
    expect(message.attachment.url).toBe(`${api.baseUrl}/attachments/${attachment.id}/content`);
    expect(message).not.toHaveProperty("attachment_id");
    expect((await client.get(`/messages/${message.id}`)).body).toEqual(message);
    expect((await download(org.test, message.attachment.url)).status).toBe(200);
    expect(await outboxRows(message.id)).toHaveLength(1);
  });

  it.each(MEDIA_TYPES)("sends %s with a matching attachment and no caption", async (kind) => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const attachment = await uploadOf(org.test, kind);

    const message = await send(client, { conversation_id: conversation.id, type: kind, attachment_id: attachment.id });

    expect(message).toMatchObject({ type: kind, text: null, status: "queued" });
    expect(message.attachment.id).toBe(attachment.id);
  });

  it("sends media on a manual record with status null", async () => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, null);
    const attachment = await uploadOf(org.test, "document");

    const message = await send(client, {
      conversation_id: conversation.id,
      type: "document",
      attachment_id: attachment.id,
    });

    expect(message).toMatchObject({ status: null, type: "document" });
    expect(message.attachment.id).toBe(attachment.id);
  });

  it("lets one attachment be sent in several conversations while it is valid", async () => {
    const { org, client } = await setup();
    const first = await conversationOn(client, "whatsapp");
    const second = await conversationOn(client, "messenger");
    const attachment = await uploadOf(org.test, "document");

    const one = await send(client, {
      conversation_id: first.conversation.id,
      type: "document",
      attachment_id: attachment.id,
    });
    const two = await send(client, {
      conversation_id: second.conversation.id,
      type: "document",
      attachment_id: attachment.id,
    });

    expect(one.attachment.id).toBe(attachment.id);
    expect(two.attachment.id).toBe(attachment.id);
  });

  it("accepts the attachment id in lower case", async () => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const attachment = await uploadOf(org.test, "document");

    const message = await send(client, {
      conversation_id: conversation.id,
      type: "document",
      attachment_id: `att_${attachment.id.slice(4).toLowerCase()}`,
    });

    expect(message.attachment.id).toBe(attachment.id);
  });

  it.each([
    ["document", "image"],
    ["image", "document"],
    ["audio", "video"],
    ["video", "audio"],
    ["document", "audio"],
  ] as const)("refuses a %s attachment sent as %s with 422 attachment_type_mismatch", async (kind, sentAs) => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const attachment = await uploadOf(org.test, kind);

    const response = await client.post("/messages", {
      body: { conversation_id: conversation.id, type: sentAs, attachment_id: attachment.id },
    });

    expectError(response, 422, "attachment_type_mismatch", "type");
  });

  it("refuses an unknown attachment with 404 attachment_not_found", async () => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");

    const response = await client.post("/messages", {
      body: { conversation_id: conversation.id, type: "image", attachment_id: UNKNOWN.attachment },
    });

    expectError(response, 404, "attachment_not_found");
  });

  it("refuses an expired attachment with 404 attachment_not_found", async () => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const attachment = await uploadOf(org.test, "image");
    await expireAttachment(attachment.id);

    const response = await client.post("/messages", {
      body: { conversation_id: conversation.id, type: "image", attachment_id: attachment.id },
    });

    expectError(response, 404, "attachment_not_found");
  });

  it("refuses an expired attachment even when an earlier message used it", async () => {
    const { org, client } = await setup();
    const first = await conversationOn(client, "whatsapp");
    const second = await conversationOn(client, "whatsapp");
    const attachment = await uploadOf(org.test, "document");
    await send(client, { conversation_id: first.conversation.id, type: "document", attachment_id: attachment.id });
    await expireAttachment(attachment.id);

    const response = await client.post("/messages", {
      body: { conversation_id: second.conversation.id, type: "document", attachment_id: attachment.id },
    });

    expectError(response, 404, "attachment_not_found");
  });

  it("refuses another organization's attachment with 404 attachment_not_found", async () => {
    const { client } = await setup();
    const stranger = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const foreign = await uploadOf(stranger.org.test, "image");

    const response = await client.post("/messages", {
      body: { conversation_id: conversation.id, type: "image", attachment_id: foreign.id },
    });

    expectError(response, 404, "attachment_not_found");
  });

  it("refuses the live environment's attachment in the sandbox with 404 attachment_not_found", async () => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const live = await uploadOf(org.live, "image");

    const response = await client.post("/messages", {
      body: { conversation_id: conversation.id, type: "image", attachment_id: live.id },
    });

    expectError(response, 404, "attachment_not_found");
  });
});

describe("POST /messages: a refused send stores nothing", () => {
  it("leaves the conversation, its messages and its outbox exactly as before every refusal", async () => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, "instagram");
    await sendText(client, conversation.id, "Earlier message");
    const pdf = await uploadOf(org.test, "document");
    const image = await uploadOf(org.test, "image");
    const expired = await uploadOf(org.test, "image");
    await expireAttachment(expired.id);
    const foreign = await uploadOf((await setup()).org.test, "image");
    const before = await snapshot(client, org.id, conversation.id);
    expect(before.messages.data).toHaveLength(1);
    expect(before.outbox).toBe(1);

    const refusals: [Record<string, unknown>, number, string][] = [
      [{ type: "template", template: { name: "x" } }, 422, "unsupported_message_type"],
      [{ type: "document", attachment_id: pdf.id }, 422, "unsupported_message_type"],
      [{ type: "image", attachment_id: pdf.id, text: "caption" }, 422, "attachment_type_mismatch"],
      [{ type: "image", attachment_id: expired.id }, 404, "attachment_not_found"],
      [{ type: "image", attachment_id: foreign.id }, 404, "attachment_not_found"],
      [{ type: "image", attachment_id: UNKNOWN.attachment }, 404, "attachment_not_found"],
      [{ type: "image" }, 422, "validation_error"],
      [{ type: "text" }, 422, "validation_error"],
      [{ type: "text", text: "Hi", attachment_id: image.id }, 422, "validation_error"],
    ];
    for (const [body, status, code] of refusals) {
      expectError(
        await client.post("/messages", { body: { conversation_id: conversation.id, ...body } }),
        status,
        code,
      );
    }

    expect(await snapshot(client, org.id, conversation.id)).toEqual(before);
  });

  it("stores the sends and nothing of the refusals when they arrive together (one shared transaction)", async () => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, "instagram");
    const pdf = await uploadOf(org.test, "document");
    const before = await snapshot(client, org.id, conversation.id);
    const post = (body: Record<string, unknown>) =>
      client.post("/messages", { body: { conversation_id: conversation.id, ...body } });

    const texts = Array.from({ length: 12 }, (_, i) => `Together ${i}`);
    const [refusedType, refusedAttachment, refusedConversation, ...sent] = await Promise.all([
      post({ type: "template", template: { name: "x" } }),
      post({ type: "image", attachment_id: pdf.id, text: "caption" }),
      client.post("/messages", { body: { conversation_id: UNKNOWN.conversation, type: "text", text: "Lost" } }),
      ...texts.map((text) => post({ type: "text", text })),
    ]);

    expectError(refusedType, 422, "unsupported_message_type");
    expectError(refusedAttachment, 422, "attachment_type_mismatch");
    expectError(refusedConversation, 404, "resource_not_found");
    expect(sent.map((response) => response.status)).toEqual(texts.map(() => 201));
    const after = await snapshot(client, org.id, conversation.id);
    expect(after.outbox).toBe(before.outbox + texts.length);
    expect(after.stored).toBe(before.stored + texts.length);
    expect(after.retained).toEqual(before.retained);
    expect(after.messages.data.map((message: { text: string }) => message.text).sort()).toEqual(texts.sort());
  });

  it("leaves a web chat conversation unchanged after refused media", async () => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, "webchat");
    const image = await uploadOf(org.test, "image");
    const before = await snapshot(client, org.id, conversation.id);

    expectError(
      await client.post("/messages", {
        body: { conversation_id: conversation.id, type: "image", attachment_id: image.id },
      }),
      422,
      "unsupported_message_type",
    );

    expect(await snapshot(client, org.id, conversation.id)).toEqual(before);
  });
});

describe("POST /messages: conversations", () => {
  it("answers 404 resource_not_found naming conversation_id for an unknown conversation", async () => {
    const { client } = await setup();

    const response = await client.post("/messages", {
      body: { conversation_id: UNKNOWN.conversation, type: "text", text: "Hi" },
    });

    expectError(response, 404, "resource_not_found", "conversation_id");
  });

  it("answers 404 for another organization's or the other environment's conversation, and stores nothing", async () => {
    const { org, client, live } = await setup();
    const stranger = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const body = { conversation_id: conversation.id, type: "text", text: "Hi" };

    expectError(await stranger.client.post("/messages", { body }), 404, "resource_not_found", "conversation_id");
    expectError(await live.post("/messages", { body }), 404, "resource_not_found", "conversation_id");
    expect(await messageCountOf(org.id)).toBe(0);
    expect(await messageCountOf(stranger.org.id)).toBe(0);
  });

  it("accepts the conversation id in lower case", async () => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");

    const message = await send(client, {
      conversation_id: `conv_${conversation.id.slice(5).toLowerCase()}`,
      type: "text",
      text: "Hi",
    });

    expect(message.conversation_id).toBe(conversation.id);
  });
});

describe("POST /messages: Idempotency-Key", () => {
  it("replays the same message for the same key and body, storing one message and one outbox row", async () => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const body = { conversation_id: conversation.id, type: "text", text: "Only once" };
    const headers = { "idempotency-key": "send-42" };

    const first = await client.post("/messages", { body, headers });
    const replay = await client.post("/messages", { body, headers });

    expect(first.status).toBe(201);
    expect(replay.status).toBe(201);
    expect(replay.body).toEqual(first.body);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    expect(await messageCountOf(org.id)).toBe(1);
    expect(await outboxCountOf(conversation.id)).toBe(1);
    expect(await listIds(client, conversation.id)).toEqual([first.body.id]);
  });

  // A send answers before its inserts are acknowledged and COMMIT goes out behind them:
  // an insert that fails there must roll everything back and fail the request, with or
  // without a key. The failure is forced by a trigger that refuses this test's text alone.
  it("fails the request and stores nothing when an insert fails behind the answer, with or without a key", async () => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const refused = `refused-${randomUUID()}`;
    const trigger = `refuse_${randomUUID().replaceAll("-", "")}`;
    await api.client.sql.unsafe(`
      create function ${trigger}() returns trigger language plpgsql as $$
      begin
        if new.text = '${refused}' then raise exception 'refused by the test'; end if;
        return new;
      end $$;
      create trigger ${trigger} before insert on messages for each row execute function ${trigger}();`);
    try {
      const body = { conversation_id: conversation.id, type: "text", text: refused };
      const headers = { "idempotency-key": `send-${randomUUID()}` };
      expectError(await client.post("/messages", { body, headers }), 500, "internal_error");
      expectError(await client.post("/messages", { body }), 500, "internal_error");
      expect(await messageCountOf(org.id)).toBe(0);
      expect(await outboxCountOf(conversation.id)).toBe(0);

      await api.client.sql.unsafe(`drop trigger ${trigger} on messages`);
      // The key was not stored with the failure: the retry runs and stores the message once.
      const retry = await client.post("/messages", { body, headers });
      expect(retry.status, JSON.stringify(retry.body)).toBe(201);
      expect(retry.headers.get("idempotent-replayed")).toBeNull();
      expect(await messageCountOf(org.id)).toBe(1);
      expect(await outboxCountOf(conversation.id)).toBe(1);
    } finally {
      await api.client.sql.unsafe(`drop trigger if exists ${trigger} on messages; drop function ${trigger}();`);
    }
  });

  it("refuses the same key with another body with 409 idempotency_key_reuse", async () => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const headers = { "idempotency-key": "send-43" };
    await send(client, { conversation_id: conversation.id, type: "text", text: "First" }, headers);

    const response = await client.post("/messages", {
      body: { conversation_id: conversation.id, type: "text", text: "Second" },
      headers,
    });

    expectError(response, 409, "idempotency_key_reuse");
    expect(await messageCountOf(org.id)).toBe(1);
  });

  it("runs a retry normally after a refused send with the same key", async () => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const attachment = await uploadOf(org.test, "document");
    const body = { conversation_id: conversation.id, type: "document", attachment_id: attachment.id };
    const headers = { "idempotency-key": "send-44" };
    await api.client.sql`update attachments set expires_at = now() - interval '1 second' where id = ${attachment.id}`;
    expectError(await client.post("/messages", { body, headers }), 404, "attachment_not_found");
    await api.client.sql`update attachments set expires_at = now() + interval '1 hour' where id = ${attachment.id}`;

    const retry = await client.post("/messages", { body, headers });

    expect(retry.status, JSON.stringify(retry.body)).toBe(201);
    expect(retry.headers.get("idempotent-replayed")).toBeNull();
    expect(await messageCountOf(org.id)).toBe(1);
  });

  it("creates two messages without a key", async () => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");

    const first = await sendText(client, conversation.id, "Same");
    const second = await sendText(client, conversation.id, "Same");

    expect(second.id).not.toBe(first.id);
    expect(await messageCountOf(org.id)).toBe(2);
  });
});

describe("GET /messages/{message_id}", () => {
  it("answers 404 resource_not_found for an unknown or malformed id", async () => {
    const { client } = await setup();

    expectError(await client.get(`/messages/${UNKNOWN.message}`), 404, "resource_not_found");
    expectError(await client.get("/messages/nope"), 404, "resource_not_found");
  });

  it("answers 404 for another organization's or the other environment's message", async () => {
    const { client, live } = await setup();
    const stranger = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const message = await sendText(client, conversation.id);

    expectError(await stranger.client.get(`/messages/${message.id}`), 404, "resource_not_found");
    expectError(await live.get(`/messages/${message.id}`), 404, "resource_not_found");
    expect((await client.get(`/messages/${message.id}`)).status).toBe(200);
  });

  it("accepts the id in lower case", async () => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const message = await sendText(client, conversation.id);

    const response = await client.get(`/messages/msg_${message.id.slice(4).toLowerCase()}`);

    expect(response.body.id).toBe(message.id);
  });

  it("shows a failed message's error with the provider's code and message, and error null on the others", async () => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const failed = await sendText(client, conversation.id, "Outside the window");
    const other = await sendText(client, conversation.id, "Still queued");
    await api.client.sql`
      update messages set status = 'failed', error_code = '131047',
        error_message = 'Re-engagement message: more than 24 hours have passed since the customer last replied.'
      where id = ${failed.id}`;

    const fetched = await client.get(`/messages/${failed.id}`);

    expect(fetched.body).toMatchObject({
      status: "failed",
      error: {
        code: "131047",
        message: "Re-engagement message: more than 24 hours have passed since the customer last replied.",
      },
    });
    expect(Object.keys(fetched.body.error).sort()).toEqual(["code", "message"]);
    expect((await client.get(`/messages/${other.id}`)).body.error).toBeNull();
    const listed = await client.get(`/conversations/${conversation.id}/messages`);
    expect(listed.body.data.map((message: { error: unknown }) => message.error)).toEqual([
      null,
      { code: "131047", message: expect.stringContaining("24 hours") },
    ]);
  });

  it.each(["sent", "delivered", "read"])("shows error null on a %s message", async (status) => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const message = await sendText(client, conversation.id);
    await api.client.sql`update messages set status = ${status} where id = ${message.id}`;

    const fetched = await client.get(`/messages/${message.id}`);

    expect(fetched.body).toMatchObject({ status, error: null });
  });
});

describe("GET /conversations/{conversation_id}/messages", () => {
  it("lists the conversation's messages newest first, inbound and outbound", async () => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const other = await conversationOn(client, "whatsapp");
    const first = await sendText(client, conversation.id, "one");
    const inbound = await insertInbound(org.id, conversation.id, "two");
    const third = await sendText(client, conversation.id, "three");
    await sendText(client, other.conversation.id, "elsewhere");

    const response = await client.get(`/conversations/${conversation.id}/messages`);

    expect(response.status).toBe(200);
    expect(response.body.object).toBe("list");
    expect(response.body.pagination).toEqual({ has_more: false, next_cursor: null });
    expect(response.body.data.map((message: { id: string }) => message.id)).toEqual([third.id, inbound, first.id]);
    expect(response.body.data[0]).toEqual(third);
    expect(response.body.data[1]).toMatchObject({ direction: "inbound", status: null, text: "two" });
  });

  // A page's messages are kept as JSON text by their rows' versions (message-texts.ts): a page
  // read again must answer each message as it is now, and in the bytes JSON.stringify writes.
  it("answers a page read again with each message as it is now, even one changed twice without a new updated_at", async () => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const first = await sendText(client, conversation.id, "one");
    // Text of several bytes a character: a page's length is counted in bytes.
    const second = await sendText(client, conversation.id, "two, déjà vu 😀 中文");
    const pageText = async () => {
      const response = await fetch(`${api.baseUrl}/conversations/${conversation.id}/messages`, {
        headers: { authorization: `Bearer ${org.test}` },
      });
      expect(response.status).toBe(200);
      return response.text();
    };
    const messageOf = (text: string, id: string) =>
      JSON.parse(text).data.find((message: { id: string }) => message.id === id);

    const before = await pageText();
    expect(JSON.stringify(JSON.parse(before))).toBe(before);
    expect(await pageText()).toBe(before);

    // Changed in place, twice, its updated_at left as it was.
    const [row] = await api.client.sql<{ updated_at: string }[]>`
      select updated_at::text from messages where id = ${first.id}`;
    await api.client.sql`
      update messages set status = 'failed', error_code = 'provider_rejected', error_message = 'First'
      where id = ${first.id}`;
    const failed = await pageText();
    expect(messageOf(failed, first.id)).toMatchObject({
      status: "failed",
      error: { code: "provider_rejected", message: "First" },
    });
    await api.client.sql`update messages set error_message = 'Second' where id = ${first.id}`;
    const again = await pageText();
    expect(messageOf(again, first.id).error).toEqual({ code: "provider_rejected", message: "Second" });
    const [after] = await api.client.sql<{ updated_at: string }[]>`
      select updated_at::text from messages where id = ${first.id}`;
    expect(after?.updated_at).toBe(row?.updated_at);

    // In the page's order still, the kept message beside the one read again.
    const ids = (text: string) => JSON.parse(text).data.map((message: { id: string }) => message.id);
    expect(ids(again)).toEqual(ids(before));
    expect(ids(before)).toEqual([second.id, first.id]);

    // Each message as GET answers it, the page in JSON.stringify's bytes.
    for (const id of [first.id, second.id]) {
      expect(messageOf(again, id)).toEqual((await client.get(`/messages/${id}`)).body);
    }
    expect(JSON.stringify(JSON.parse(again))).toBe(again);
  });

  // Only an empty page looks the conversation up: unknown, it is not found; known, the page is empty.
  it("answers an empty page for a conversation without messages and 404 for an unknown one, with or without filters", async () => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const sent = await sendText(client, (await conversationOn(client, "whatsapp")).conversation.id);

    for (const query of [{}, { direction: "outbound" }]) {
      const empty = await client.get(`/conversations/${conversation.id}/messages`, { query });
      expect(empty.status).toBe(200);
      expect(empty.body).toEqual({ object: "list", data: [], pagination: { has_more: false, next_cursor: null } });

      const unknown = await client.get(`/conversations/${UNKNOWN.conversation}/messages`, { query });
      expectError(unknown, 404, "resource_not_found");
      // A message's id is no conversation's.
      const notAConversation = await client.get(`/conversations/${sent.id}/messages`, { query });
      expect(notAConversation.status).not.toBe(200);
    }
    const noMatch = await client.get(`/conversations/${conversation.id}/messages`, { query: { direction: "inbound" } });
    expect(noMatch.body.data).toEqual([]);
  });

  it("filters by direction", async () => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const outbound = await sendText(client, conversation.id);
    const inbound = await insertInbound(org.id, conversation.id, "from the contact");

    expect(await listIds(client, conversation.id, { direction: "inbound" })).toEqual([inbound]);
    expect(await listIds(client, conversation.id, { direction: "outbound" })).toEqual([outbound.id]);
  });

  it("filters by created_after (inclusive) and created_before (exclusive)", async () => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const old = await sendText(client, conversation.id, "old");
    const middle = await sendText(client, conversation.id, "middle");
    const recent = await sendText(client, conversation.id, "recent");
    await setCreatedAt(old.id, "2020-01-01T00:00:00.000Z");
    await setCreatedAt(middle.id, "2021-01-01T00:00:00.000Z");
    await setCreatedAt(recent.id, "2022-01-01T00:00:00.000Z");

    expect(await listIds(client, conversation.id, { created_after: "2020-06-01T00:00:00Z" })).toEqual([
      recent.id,
      middle.id,
    ]);
    expect(await listIds(client, conversation.id, { created_before: "2021-06-01T00:00:00.000Z" })).toEqual([
      middle.id,
      old.id,
    ]);
    expect(
      await listIds(client, conversation.id, {
        created_after: "2020-06-01T00:00:00+02:00",
        created_before: "2021-06-01T00:00:00Z",
      }),
    ).toEqual([middle.id]);
    expect(await listIds(client, conversation.id, { created_after: "2021-01-01T00:00:00.000Z" })).toEqual([
      recent.id,
      middle.id,
    ]);
    expect(await listIds(client, conversation.id, { created_before: "2021-01-01T00:00:00.000Z" })).toEqual([old.id]);
  });

  it("pages with limit and next_cursor, every message once, newest first", async () => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const sent: string[] = [];
    for (let index = 0; index < 5; index++) sent.push((await sendText(client, conversation.id, `m${index}`)).id);

    const firstPage = await client.get(`/conversations/${conversation.id}/messages`, { query: { limit: 2 } });
    expect(firstPage.body.data).toHaveLength(2);
    expect(firstPage.body.pagination.has_more).toBe(true);
    expect(typeof firstPage.body.pagination.next_cursor).toBe("string");

    const all = await walkList(client, `/conversations/${conversation.id}/messages`, { limit: 2 });
    expect(all.map((message: { id: string }) => message.id)).toEqual([...sent].reverse());
  });

  it("keeps later pages stable when messages arrive after the cursor was issued", async () => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const sent: string[] = [];
    for (let index = 0; index < 4; index++) sent.push((await sendText(client, conversation.id, `m${index}`)).id);
    const path = `/conversations/${conversation.id}/messages`;
    const firstPage = await client.get(path, { query: { limit: 2 } });

    await sendText(client, conversation.id, "newer");
    const secondPage = await client.get(path, { query: { limit: 2, after: firstPage.body.pagination.next_cursor } });

    expect(secondPage.body.data.map((message: { id: string }) => message.id)).toEqual([sent[1], sent[0]]);
    expect(secondPage.body.pagination.has_more).toBe(false);
  });

  it("refuses a cursor of another conversation's list with 422 invalid_cursor", async () => {
    const { client } = await setup();
    const one = await conversationOn(client, "whatsapp");
    const two = await conversationOn(client, "whatsapp");
    for (let index = 0; index < 3; index++) await sendText(client, one.conversation.id, `m${index}`);
    const page = await client.get(`/conversations/${one.conversation.id}/messages`, { query: { limit: 1 } });

    const response = await client.get(`/conversations/${two.conversation.id}/messages`, {
      query: { after: page.body.pagination.next_cursor },
    });

    expectError(response, 422, "invalid_cursor");
  });

  it.each([
    ["direction", "sideways"],
    ["created_after", "yesterday"],
    ["created_before", "2021-13-01T00:00:00Z"],
    ["limit", "0"],
    ["limit", "101"],
    ["status", "queued"],
  ])("refuses %s=%s with 422 naming it", async (param, value) => {
    const { client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");

    expectValidationError(
      await client.get(`/conversations/${conversation.id}/messages`, { query: { [param]: value } }),
      param,
    );
  });

  it("answers 404 resource_not_found for an unknown, foreign or other-environment conversation", async () => {
    const { client, live } = await setup();
    const stranger = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    await sendText(client, conversation.id);
    const path = `/conversations/${conversation.id}/messages`;

    expectError(await client.get(`/conversations/${UNKNOWN.conversation}/messages`), 404, "resource_not_found");
    expectError(await stranger.client.get(path), 404, "resource_not_found");
    expectError(await live.get(path), 404, "resource_not_found");
  });
});

describe("deleting the contact", () => {
  it("deletes its conversations' messages and their outbox rows", async () => {
    const { org, client } = await setup();
    const { contact, conversation } = await conversationOn(client, "whatsapp");
    const other = await conversationOn(client, "whatsapp");
    const attachment = await uploadOf(org.test, "document");
    const text = await sendText(client, conversation.id);
    const media = await send(client, {
      conversation_id: conversation.id,
      type: "document",
      attachment_id: attachment.id,
    });
    const kept = await sendText(client, other.conversation.id, "another contact");

    expect((await client.delete(`/contacts/${contact.id}`)).status).toBe(200);

    expectError(await client.get(`/messages/${text.id}`), 404, "resource_not_found");
    expectError(await client.get(`/messages/${media.id}`), 404, "resource_not_found");
    expectError(await client.get(`/conversations/${conversation.id}/messages`), 404, "resource_not_found");
    const left = await api.client.sql<{ id: string }[]>`select id from messages where organization_id = ${org.id}`;
    expect(left).toEqual([{ id: kept.id }]);
    expect(await outboxRows(text.id)).toEqual([]);
    expect(await outboxRows(media.id)).toEqual([]);
    expect(await outboxRows(kept.id)).toHaveLength(1);
  });
});

describe("scopes", () => {
  it("sends with messages:write and reads with messages:read, each refused without its scope", async () => {
    const { org, client } = await setup();
    const { conversation } = await conversationOn(client, "whatsapp");
    const message = await sendText(client, conversation.id);
    const keyWith = async (scope: "messages:read" | "messages:write") =>
      as(
        api,
        (await createApiKey(api.context.db, { organizationId: org.id, environment: "test", scopes: [scope] })).key,
      );
    const reader = await keyWith("messages:read");
    const writer = await keyWith("messages:write");
    const body = { conversation_id: conversation.id, type: "text", text: "Hi" };

    const refusedSend = await reader.post("/messages", { body });
    expectError(refusedSend, 403, "insufficient_scope");
    expect(refusedSend.body.error.message).toContain("messages:write");
    expectError(await writer.get(`/messages/${message.id}`), 403, "insufficient_scope");
    expectError(await writer.get(`/conversations/${conversation.id}/messages`), 403, "insufficient_scope");
    expect((await reader.get(`/messages/${message.id}`)).status).toBe(200);
    expect((await reader.get(`/conversations/${conversation.id}/messages`)).status).toBe(200);
    expect((await writer.post("/messages", { body })).status).toBe(201);
    expect(await messageCountOf(org.id)).toBe(2);
  });
});
