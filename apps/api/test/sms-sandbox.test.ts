import { capabilityMatrix, channelCapabilities } from "@parley/channels";
import { describe, expect, it } from "vitest";
import { updateChannelSettings } from "../src/channels/lifecycle.js";
import {
  type Client,
  eventTypes,
  onlyEvent,
  sandboxChannel,
  testClient,
  waitForStatus,
  waitPastReceiptDelays,
  waitUntilSettled,
} from "./delivery-helpers.js";
import { makeImage, upload } from "./files.js";
import { expectError, expectValidationError, useTestApi, useTestWorker } from "./harness.js";

/**
 * The sandbox `sms` channel end to end: the send's checks before anything is stored
 * (address, length, type), its segments, the delivery cycle through the real worker, and
 * inbound texts through the test helper, STOP and START included.
 */
const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "100000" }, { ownDatabase: true });
useTestWorker(api, { sandbox: { deliveryDelayMs: 50, readDelayMs: 50 } });

const EMOJI = "😀";

/** A contact with this phone (as typed) and a conversation with it on the sandbox SMS channel. */
async function smsConversation(client: Client, phone: string | null = "(415) 555-0100") {
  const channel = await sandboxChannel(client, "sms");
  const contact = await client.post("/contacts", { body: { name: "Ada", ...(phone ? { phone } : {}) } });
  expect(contact.status, JSON.stringify(contact.body)).toBe(201);
  const conversation = await client.post("/conversations", {
    body: { contact_id: contact.body.id, channel_id: channel.id },
  });
  expect(conversation.status, JSON.stringify(conversation.body)).toBe(201);
  return { channel, contact: contact.body, conversation: conversation.body };
}

async function send(client: Client, body: Record<string, unknown>) {
  return client.post("/messages", { body: { type: "text", ...body } });
}

/** A text from a phone to the channel, through the test helper; expects 201. */
async function textFrom(client: Client, channelId: string, from: string, text: string) {
  const response = await client.post("/test-helpers/inbound-messages", {
    body: { channel_id: channelId, from, type: "text", text },
  });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

async function messageCount(conversationId: string): Promise<number> {
  const [row] = await api.client.sql<{ count: number }[]>`
    select count(*)::int as count from messages where conversation_id = ${conversationId}`;
  return row?.count ?? 0;
}

async function optOutsOf(client: Client, contactId: string) {
  const response = await client.get(`/contacts/${contactId}/opt-outs`);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.data;
}

async function uploadPng(key: string) {
  const bytes = await makeImage("png", { width: 16, height: 16 });
  const response = await upload(api, key, { bytes, type: "image/png", filename: "photo.png" });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

describe("the sandbox sms channel", () => {
  it("is listed with its type, provider and capabilities: text, delivery receipts, no read receipts, no window", async () => {
    const { client } = await testClient(api);

    const channel = await sandboxChannel(client, "sms");
    const fetched = await client.get(`/channels/${channel.id}`);

    expect(fetched.body).toEqual(channel);
    expect(channel).toMatchObject({ type: "sms", provider: "sandbox", sandbox: true, environment: "test" });
    expect(channel.capabilities).toEqual({
      message_types: ["text"],
      delivery_receipts: true,
      read_receipts: false,
      session_window: null,
    });
  });

  it("carries image once its number can send MMS (the channel's mms setting)", async () => {
    const { client } = await testClient(api);
    const channel = await sandboxChannel(client, "sms");

    const updated = await updateChannelSettings(api.context.db, api.context.secretBox, {
      channelId: channel.id,
      settings: { mms: "true" },
    });

    expect(updated.capabilities.message_types).toEqual(["text", "image"]);
    expect((await client.get(`/channels/${channel.id}`)).body.capabilities).toEqual(
      capabilityMatrix(channelCapabilities({ type: "sms", settings: { mms: true } })),
    );
  });
});

describe("sending on the sandbox sms channel", () => {
  it("goes sent then delivered, with message.sent and message.delivered, never read", async () => {
    const { client } = await testClient(api);
    const { conversation } = await smsConversation(client);

    const response = await send(client, {
      conversation_id: conversation.id,
      text: "Your table is ready [sandbox:read]",
    });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    expect(response.body).toMatchObject({ status: "queued", sms: { segments: 1, encoding: "GSM-7" } });

    const delivered = await waitForStatus(api, client, response.body.id, "delivered");
    await waitUntilSettled(api, response.body.id);
    await waitPastReceiptDelays();
    expect(delivered.status).toBe("delivered");
    expect(await eventTypes(api, response.body.id)).toEqual(["message.sent", "message.delivered"]);
    expect((await client.get(`/messages/${response.body.id}`)).body.status).toBe("delivered");
  });

  it.each([
    ["a GSM-7 text", "Hello Ada, your order #1234 has shipped.", { segments: 1, encoding: "GSM-7" }],
    ["161 GSM-7 characters", "a".repeat(161), { segments: 2, encoding: "GSM-7" }],
    ["extension characters, two septets each", "€".repeat(81), { segments: 2, encoding: "GSM-7" }],
    ["a text with an emoji", `See you soon ${EMOJI}`, { segments: 1, encoding: "UCS-2" }],
    ["71 UCS-2 units", `${"a".repeat(69)}${EMOJI}`, { segments: 2, encoding: "UCS-2" }],
  ])("tells the sender how carriers count %s, in the answer and in GET", async (_, text, sms) => {
    const { client } = await testClient(api);
    const { conversation } = await smsConversation(client);

    const response = await send(client, { conversation_id: conversation.id, text });

    expect(response.status, JSON.stringify(response.body)).toBe(201);
    expect(response.body.sms).toEqual(sms);
    expect((await client.get(`/messages/${response.body.id}`)).body.sms).toEqual(sms);
    const page = await client.get(`/conversations/${conversation.id}/messages`);
    expect(page.body.data[0].sms).toEqual(sms);
  });

  it("leaves sms null on other channels", async () => {
    const { client } = await testClient(api);
    const email = await sandboxChannel(client, "email");
    const contact = await client.post("/contacts", { body: { email: "ada@example.com" } });
    const conversation = await client.post("/conversations", {
      body: { contact_id: contact.body.id, channel_id: email.id },
    });

    const response = await send(client, { conversation_id: conversation.body.id, text: "Hello" });

    expect(response.status).toBe(201);
    expect(response.body.sms).toBeNull();
  });

  it("refuses a text over 1,600 characters with 422 before anything is stored; 1,600 goes", async () => {
    const { client } = await testClient(api);
    const { conversation } = await smsConversation(client);
    const before = await messageCount(conversation.id);

    const refused = await send(client, { conversation_id: conversation.id, text: "a".repeat(1601) });

    expectValidationError(refused, "text");
    expect(await messageCount(conversation.id)).toBe(before);
    const emojis = await send(client, { conversation_id: conversation.id, text: EMOJI.repeat(801) });
    expectValidationError(emojis, "text");
    expect(await messageCount(conversation.id)).toBe(before);
    const longest = await send(client, { conversation_id: conversation.id, text: "a".repeat(1600) });
    expect(longest.status).toBe(201);
    expect(longest.body.sms).toEqual({ segments: 11, encoding: "GSM-7" });
  });

  it("refuses with 422 a conversation whose contact has no phone to text, before anything is stored", async () => {
    const { client } = await testClient(api);
    const none = await smsConversation(client, null);
    const unusable = await smsConversation(client, "555-0100 please");

    for (const { conversation } of [none, unusable]) {
      const response = await send(client, { conversation_id: conversation.id, text: "Hello" });
      expectValidationError(response, "conversation_id");
      expect(response.body.error.message).toContain("phone");
      expect(await messageCount(conversation.id)).toBe(0);
    }
  });

  it("sends to a phone typed with its country code, or national in the channel's default region", async () => {
    const { client } = await testClient(api);
    const british = await smsConversation(client, "+44 7700 900123");

    const response = await send(client, { conversation_id: british.conversation.id, text: "Hello" });

    expect(response.status, JSON.stringify(response.body)).toBe(201);
    await waitForStatus(api, client, response.body.id, "delivered");
  });

  it("refuses an image on a channel whose number cannot send MMS with 422 unsupported_message_type", async () => {
    const { org, client } = await testClient(api);
    const { conversation } = await smsConversation(client);
    const image = await uploadPng(org.test);

    const response = await send(client, { conversation_id: conversation.id, type: "image", attachment_id: image.id });

    expectError(response, 422, "unsupported_message_type", "type");
    expect(await messageCount(conversation.id)).toBe(0);
  });

  it("sends an image as MMS on a channel whose number can, without segments", async () => {
    const { org, client } = await testClient(api);
    const { channel, conversation } = await smsConversation(client);
    await updateChannelSettings(api.context.db, api.context.secretBox, {
      channelId: channel.id,
      settings: { mms: "true" },
    });
    const image = await uploadPng(org.test);

    const response = await send(client, {
      conversation_id: conversation.id,
      type: "image",
      attachment_id: image.id,
      text: "The menu",
    });

    expect(response.status, JSON.stringify(response.body)).toBe(201);
    expect(response.body.sms).toBeNull();
    await waitForStatus(api, client, response.body.id, "delivered");
  });

  it("fails on [sandbox:fail] as the other sandboxes do", async () => {
    const { client } = await testClient(api);
    const { conversation } = await smsConversation(client);

    const response = await send(client, { conversation_id: conversation.id, text: "Hello [sandbox:fail=30003]" });

    const failed = await waitForStatus(api, client, response.body.id, "failed");
    expect(failed.error.code).toBe("30003");
  });
});

describe("inbound texts through the test helper", () => {
  it("finds the contact typed as (415) 555-0100 by a text from +14155550100, in its conversation", async () => {
    const { client } = await testClient(api);
    const { channel, contact, conversation } = await smsConversation(client);

    const message = await textFrom(client, channel.id, "+14155550100", "Is my table ready?");

    expect(message).toMatchObject({ direction: "inbound", status: null, text: "Is my table ready?", sms: null });
    expect(message.conversation_id).toBe(conversation.id);
    const conversations = await client.get("/conversations", { query: { contact_id: contact.id } });
    expect(conversations.body.data.map((row: { id: string }) => row.id)).toEqual([conversation.id]);
    await onlyEvent(api, message.id, "message.received");
  });

  it("creates a contact with the number in E.164 for a number it does not know", async () => {
    const { client } = await testClient(api);
    const channel = await sandboxChannel(client, "sms");

    const message = await textFrom(client, channel.id, "(212) 555-0199", "Hi");

    const conversation = await client.get(`/conversations/${message.conversation_id}`);
    const contact = await client.get(`/contacts/${conversation.body.contact_id}`);
    expect(contact.body.phone).toBe("+12125550199");
    const again = await textFrom(client, channel.id, "+1 212 555 0199", "Still there?");
    expect(again.conversation_id).toBe(message.conversation_id);
  });

  it("refuses a from that is no phone number, and channel_id on another type", async () => {
    const { client } = await testClient(api);
    const sms = await sandboxChannel(client, "sms");
    const email = await sandboxChannel(client, "email");

    const notPhone = await client.post("/test-helpers/inbound-messages", {
      body: { channel_id: sms.id, from: "not a number", type: "text", text: "Hi" },
    });
    const otherType = await client.post("/test-helpers/inbound-messages", {
      body: { channel_id: email.id, from: "+14155550100", type: "text", text: "Hi" },
    });
    const neither = await client.post("/test-helpers/inbound-messages", { body: { type: "text", text: "Hi" } });

    expectValidationError(notPhone, "from");
    expectValidationError(otherType, "channel_id");
    expectValidationError(neither, "conversation_id");
  });
});

describe("opting out and back in", () => {
  it("STOP opts the contact out (visible through the API); a later send is 201, then fails with 21610 without being sent", async () => {
    const { client } = await testClient(api);
    const { channel, contact, conversation } = await smsConversation(client);

    const stop = await textFrom(client, channel.id, "+14155550100", " stop ");
    expect(stop.conversation_id).toBe(conversation.id);

    const optOuts = await optOutsOf(client, contact.id);
    expect(optOuts).toEqual([
      {
        object: "opt_out",
        id: expect.stringMatching(/^opt_[0-9A-HJKMNP-TV-Z]{26}$/),
        contact_id: contact.id,
        channel_id: channel.id,
        keyword: "STOP",
        created_at: expect.any(String),
      },
    ]);
    const response = await send(client, { conversation_id: conversation.id, text: "One more offer" });
    expect(response.status).toBe(201);
    expect(response.body.status).toBe("queued");

    const failed = await waitForStatus(api, client, response.body.id, "failed");
    expect(failed.error).toEqual({ code: "21610", message: "Attempt to send to unsubscribed recipient" });
    await waitUntilSettled(api, response.body.id);
    // The sandbox adapter was never asked: no `sent` before the failure.
    expect(await eventTypes(api, response.body.id)).toEqual(["message.failed"]);
  });

  it("START opts the contact back in: the next send is delivered", async () => {
    const { client } = await testClient(api);
    const { channel, contact, conversation } = await smsConversation(client);
    await textFrom(client, channel.id, "+14155550100", "UNSUBSCRIBE");
    expect(await optOutsOf(client, contact.id)).toHaveLength(1);

    await textFrom(client, channel.id, "+14155550100", "Start");

    expect(await optOutsOf(client, contact.id)).toEqual([]);
    const response = await send(client, { conversation_id: conversation.id, text: "Welcome back" });
    await waitForStatus(api, client, response.body.id, "delivered");
  });

  it("a STOP in the conversation (test helper by conversation_id) opts out too; UNSTOP undoes it", async () => {
    const { client } = await testClient(api);
    const { contact, conversation } = await smsConversation(client);
    const inbound = (text: string) =>
      client.post("/test-helpers/inbound-messages", { body: { conversation_id: conversation.id, type: "text", text } });

    expect((await inbound("STOP")).status).toBe(201);
    expect(await optOutsOf(client, contact.id)).toHaveLength(1);
    expect((await inbound("please stop texting me at night")).status).toBe(201);
    expect(await optOutsOf(client, contact.id)).toHaveLength(1);
    expect((await inbound("UNSTOP")).status).toBe(201);
    expect(await optOutsOf(client, contact.id)).toEqual([]);
  });

  it("an opt-out is of that channel and that contact only", async () => {
    const { client } = await testClient(api);
    const { channel, contact } = await smsConversation(client);
    const other = await smsConversation(client, "+44 7700 900123");
    await textFrom(client, channel.id, "+14155550100", "STOP");

    expect(await optOutsOf(client, contact.id)).toHaveLength(1);
    expect(await optOutsOf(client, other.contact.id)).toEqual([]);
    const response = await send(client, { conversation_id: other.conversation.id, text: "Hello" });
    await waitForStatus(api, client, response.body.id, "delivered");
  });

  it("answers 404 for the opt-outs of an unknown contact or one of another organization", async () => {
    const { client } = await testClient(api);
    const other = await testClient(api);
    const { contact } = await smsConversation(other.client);

    expectError(await client.get(`/contacts/${contact.id}/opt-outs`), 404, "resource_not_found");
    expectError(await client.get("/contacts/cnt_01ARZ3NDEKTSV4RRFFQ69G5FAV/opt-outs"), 404, "resource_not_found");
  });
});
