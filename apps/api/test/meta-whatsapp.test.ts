import {
  metaError,
  metaErrors,
  SIMULATOR_API_VERSION,
  sendWebhook,
  whatsappMediaMessage,
  whatsappStatus,
  whatsappTextMessage,
} from "@parley/channels/testing";
import { describe, expect, it } from "vitest";
import { type Client, eventTypes, onlyEvent, statusOf, waitForStatus } from "./delivery-helpers.js";
import { download, makeImage, makePdf, upload } from "./files.js";
import {
  eventually,
  expectError,
  setupOrganization,
  storedEvents,
  type TestOrganization,
  useTestApi,
  useTestWorker,
} from "./harness.js";
import {
  bodyOf,
  connectMetaChannel,
  conversationMessages,
  deliverWebhook,
  type MetaChannel,
  messagesByProviderId,
  metaWebhookJobs,
  metaWebhookUrl,
  postMessage,
  providerIdOf,
  randomSecret,
  sendRequests,
  useMetaSimulator,
  waId,
  waitForInbound,
  waitForWebhookJobs,
} from "./meta-helpers.js";

/**
 * A live WhatsApp channel against the Graph API simulator, through the real API and
 * worker on this file's own database: inbound messages and media by webhook, replies by
 * the Cloud API, status webhooks on the message state machine, refusals and retries.
 */
const meta = useMetaSimulator();
const api = useTestApi({}, { ownDatabase: true });
useTestWorker(api, () => ({ meta: meta.simulator.options() }));

const MESSAGES_PATH = (phoneNumberId: string) => `/${SIMULATOR_API_VERSION}/${phoneNumberId}/messages`;

interface Setup {
  org: TestOrganization;
  live: Client;
  channel: MetaChannel;
}

async function whatsappChannel(): Promise<Setup> {
  const { org, live } = await setupOrganization(api);
  const channel = await connectMetaChannel(api, meta.simulator, org.id, "whatsapp");
  return { org, live, channel };
}

function newWamid(): string {
  return `wamid.${randomSecret("in")}`;
}

/** A customer writes first: the conversation on the channel, with its session window open. */
async function customerWrites(setup: Setup, customer = waId(), text = "Hello, is my order on its way?") {
  const id = newWamid();
  await deliverWebhook(
    api,
    whatsappTextMessage({ phoneNumberId: setup.channel.accountId, from: customer, name: "Grace Hopper", id, text }),
    setup.channel.appSecret,
  );
  const message = await waitForInbound(api, setup.live, id);
  return { customer, message, conversationId: message.conversation_id as string };
}

/** The send request the simulator received for this message (by `biz_opaque_callback_data`). */
function sendRequestFor(channel: MetaChannel, messageId: string) {
  const matching = sendRequests(meta.simulator, channel.accountId).filter(
    (request) => bodyOf(request)?.biz_opaque_callback_data === messageId,
  );
  expect(matching, `send requests of ${messageId}`).toHaveLength(1);
  return matching[0];
}

/** A reply that reached `sent`, with its wamid. */
async function sentReply(setup: Setup, conversationId: string, text = "It ships today.") {
  const queued = await postMessage(setup.live, { conversation_id: conversationId, type: "text", text });
  const sent = await waitForStatus(api, setup.live, queued.id, "sent");
  return { queued, sent, wamid: await providerIdOf(api, queued.id) };
}

function statusWebhook(
  setup: Setup,
  input: { wamid: string; status: "sent" | "delivered" | "read" | "failed"; customer: string; messageId?: string },
  error?: { code: number; title: string },
) {
  return deliverWebhook(
    api,
    whatsappStatus({
      phoneNumberId: setup.channel.accountId,
      id: input.wamid,
      status: input.status,
      recipientId: input.customer,
      ...(input.messageId ? { callbackData: input.messageId } : {}),
      ...(error ? { error } : {}),
    }),
    setup.channel.appSecret,
  );
}

describe("inbound WhatsApp messages", () => {
  it("answers 200 at once, then creates the contact, the conversation and message.received", async () => {
    const setup = await whatsappChannel();
    const customer = waId();
    const id = newWamid();
    const response = await sendWebhook(
      metaWebhookUrl(api),
      whatsappTextMessage({
        phoneNumberId: setup.channel.accountId,
        from: customer,
        name: "Grace Hopper",
        id,
        text: "Hello, is my order on its way?",
      }),
      setup.channel.appSecret,
    );
    expect(response).toEqual({ status: 200, body: "EVENT_RECEIVED" });

    const message = await waitForInbound(api, setup.live, id);
    expect(message).toMatchObject({
      object: "message",
      direction: "inbound",
      type: "text",
      text: "Hello, is my order on its way?",
      attachment: null,
      status: null,
      error: null,
    });
    const conversation = (await setup.live.get(`/conversations/${message.conversation_id}`)).body;
    expect(conversation).toMatchObject({ channel_id: setup.channel.id, channel_type: "whatsapp", status: "open" });
    const contact = await setup.live.get(`/contacts/${conversation.contact_id}`);
    expect(contact.status).toBe(200);
    expect(contact.body).toMatchObject({ name: "Grace Hopper", phone: `+${customer}` });

    const events = await storedEvents(api, setup.org.id, "live");
    expect(events.map((event) => event.type)).toEqual(["contact.created", "conversation.created", "message.received"]);
    const [contactCreated, conversationCreated, received] = events;
    expect(contactCreated?.data.contact).toMatchObject({
      id: contact.body.id,
      phone: `+${customer}`,
      name: "Grace Hopper",
    });
    expect(conversationCreated?.data.conversation).toMatchObject({
      id: conversation.id,
      contact_id: contact.body.id,
      channel_id: setup.channel.id,
      channel_type: "whatsapp",
    });
    expect(received?.data.message).toEqual(message);
    expect(received?.data.conversation).toMatchObject({ id: conversation.id, channel_id: setup.channel.id });
    // Nothing of the test environment moved.
    expect(await storedEvents(api, setup.org.id, "test")).toEqual([]);
  });

  it("stores a webhook Meta delivers twice (at once, and again after processing) as one message", async () => {
    const setup = await whatsappChannel();
    const customer = waId();
    const id = newWamid();
    const payload = whatsappTextMessage({ phoneNumberId: setup.channel.accountId, from: customer, id, text: "Once" });
    await Promise.all([
      deliverWebhook(api, payload, setup.channel.appSecret),
      deliverWebhook(api, payload, setup.channel.appSecret),
    ]);
    await waitForInbound(api, setup.live, id);
    await waitForWebhookJobs(api);
    await deliverWebhook(api, payload, setup.channel.appSecret);
    await waitForWebhookJobs(api);

    expect(await messagesByProviderId(api, id)).toHaveLength(1);
    const types = (await storedEvents(api, setup.org.id, "live")).map((event) => event.type);
    expect(types).toEqual(["contact.created", "conversation.created", "message.received"]);
    const contacts = await setup.live.get("/contacts", { query: { phone: `+${customer}` } });
    expect(contacts.body.data).toHaveLength(1);
  });

  it("puts a second message from the same number in the same conversation, without a new contact", async () => {
    const setup = await whatsappChannel();
    const first = await customerWrites(setup, waId(), "First");
    const second = await customerWrites(setup, first.customer, "Second");
    expect(second.conversationId).toBe(first.conversationId);
    expect((await conversationMessages(setup.live, first.conversationId)).map((message) => message.text)).toEqual([
      "First",
      "Second",
    ]);
    const types = (await storedEvents(api, setup.org.id, "live")).map((event) => event.type);
    expect(types).toEqual(["contact.created", "conversation.created", "message.received", "message.received"]);

    // Another number is another contact and conversation.
    const other = await customerWrites(setup, waId(), "Third");
    expect(other.conversationId).not.toBe(first.conversationId);
  });

  it("stores an image with its bytes and caption, fetched with the token (retrying a failed fetch)", async () => {
    const setup = await whatsappChannel();
    const bytes = await makeImage("jpeg", { width: 24, height: 16, exif: null });
    const media = meta.simulator.addMedia(bytes, "image/jpeg");
    // Meta's first answer for the media is an outage: the job retries, after the 200.
    meta.simulator.failNext(1, metaErrors.unexpected(), (request) => request.path.endsWith(`/${media.id}`));
    const id = newWamid();
    await deliverWebhook(
      api,
      whatsappMediaMessage({
        phoneNumberId: setup.channel.accountId,
        from: waId(),
        id,
        kind: "image",
        mediaId: media.id,
        mimeType: "image/jpeg",
        caption: "The parcel arrived like this",
      }),
      setup.channel.appSecret,
    );
    expect(await messagesByProviderId(api, id)).toEqual([]);
    const jobs = await eventually(
      () => metaWebhookJobs(api),
      (rows) => rows.some((row) => row.last_error !== null),
    );
    expect(jobs.filter((row) => row.last_error !== null)).toEqual([expect.objectContaining({ attempts: 1 })]);

    const message = await waitForInbound(api, setup.live, id, 20_000);
    expect(message).toMatchObject({
      direction: "inbound",
      type: "image",
      text: "The parcel arrived like this",
      attachment: { object: "attachment", content_type: "image/jpeg", size: bytes.length },
    });
    const content = await download(setup.org.live, message.attachment.url);
    expect(content.status).toBe(200);
    expect(content.headers.get("content-type")).toBe("image/jpeg");
    expect(content.bytes.equals(bytes)).toBe(true);

    const lookups = meta.simulator.requests.filter(
      (request) => request.method === "GET" && request.path === `/${SIMULATOR_API_VERSION}/${media.id}`,
    );
    expect(lookups.length).toBe(2);
    for (const request of lookups) expect(request.headers.authorization).toBe(`Bearer ${meta.simulator.accessToken}`);
    const downloads = meta.simulator.requests.filter((request) => request.path === `/media/${media.id}`);
    expect(downloads).toHaveLength(1);
    expect(downloads[0]?.headers.authorization).toBe(`Bearer ${meta.simulator.accessToken}`);
    await waitForWebhookJobs(api);
  });

  it("stores a document with the sender's file name", async () => {
    const setup = await whatsappChannel();
    const bytes = makePdf("Invoice 7");
    const media = meta.simulator.addMedia(bytes, "application/pdf");
    const id = newWamid();
    await deliverWebhook(
      api,
      whatsappMediaMessage({
        phoneNumberId: setup.channel.accountId,
        from: waId(),
        id,
        kind: "document",
        mediaId: media.id,
        mimeType: "application/pdf",
        filename: "invoice-7.pdf",
        caption: "My invoice",
      }),
      setup.channel.appSecret,
    );
    const message = await waitForInbound(api, setup.live, id);
    expect(message).toMatchObject({
      type: "document",
      text: "My invoice",
      attachment: { filename: "invoice-7.pdf", content_type: "application/pdf", size: bytes.length },
    });
    const content = await download(setup.org.live, message.attachment.url);
    expect(content.status).toBe(200);
    expect(content.bytes.equals(bytes)).toBe(true);
    const received = await onlyEvent(api, message.id, "message.received");
    expect(received.data.message).toEqual(message);
  });
  it("notes a file Meta no longer serves on the message, and the job completes", async () => {
    const setup = await whatsappChannel();
    const id = newWamid();
    await deliverWebhook(
      api,
      whatsappMediaMessage({
        phoneNumberId: setup.channel.accountId,
        from: waId(),
        id,
        kind: "image",
        mediaId: "987654321098765",
        mimeType: "image/jpeg",
        caption: "Look",
      }),
      setup.channel.appSecret,
    );
    const message = await waitForInbound(api, setup.live, id);
    expect(message).toMatchObject({ direction: "inbound", text: "Look", attachment: null });
    expect(message.metadata).toEqual({ media_unavailable: true });
    await waitForWebhookJobs(api);
  });
});

describe("replies by the Cloud API", () => {
  it("POSTs the text to /{version}/{phone_number_id}/messages with the token, then reaches sent", async () => {
    const setup = await whatsappChannel();
    const { customer, conversationId } = await customerWrites(setup);
    const { queued, sent, wamid } = await sentReply(setup, conversationId, "It ships today.");

    const request = sendRequestFor(setup.channel, queued.id);
    expect(request?.method).toBe("POST");
    expect(request?.path).toBe(MESSAGES_PATH(setup.channel.accountId));
    expect(request?.headers.authorization).toBe(`Bearer ${meta.simulator.accessToken}`);
    expect(request?.headers["content-type"]).toMatch(/^application\/json/);
    // Tracing is off in this file: no trace context leaves with the call.
    expect(request?.headers.traceparent).toBeUndefined();
    expect(request?.body).toMatchObject({
      messaging_product: "whatsapp",
      to: customer,
      type: "text",
      text: { body: "It ships today." },
      biz_opaque_callback_data: queued.id,
    });
    // The token travels in the header only.
    expect(request?.path).not.toContain(meta.simulator.accessToken);
    expect(JSON.stringify(request?.body)).not.toContain(meta.simulator.accessToken);

    expect(sent).toEqual({ ...queued, status: "sent", updated_at: sent.updated_at });
    expect(wamid).toMatch(/^wamid\./);
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent"]);
    const event = await onlyEvent(api, queued.id, "message.sent");
    expect(event.data.message).toEqual(sent);
    expect(event.data.conversation).toMatchObject({ id: conversationId });
  });

  it("moves to delivered then read with the status webhooks, one event each", async () => {
    const setup = await whatsappChannel();
    const { customer, conversationId } = await customerWrites(setup);
    const { queued, wamid } = await sentReply(setup, conversationId);

    await statusWebhook(setup, { wamid, status: "delivered", customer, messageId: queued.id });
    const delivered = await waitForStatus(api, setup.live, queued.id, "delivered");
    await statusWebhook(setup, { wamid, status: "read", customer, messageId: queued.id });
    const read = await waitForStatus(api, setup.live, queued.id, "read");

    expect(await eventTypes(api, queued.id)).toEqual(["message.sent", "message.delivered", "message.read"]);
    expect((await onlyEvent(api, queued.id, "message.delivered")).data.message).toEqual(delivered);
    expect((await onlyEvent(api, queued.id, "message.read")).data.message).toEqual(read);
    expect(read.error).toBeNull();
  });

  it("never moves back: read, then a late delivered and sent, stays read without more events", async () => {
    const setup = await whatsappChannel();
    const { customer, conversationId } = await customerWrites(setup);
    const { queued, wamid } = await sentReply(setup, conversationId);

    await statusWebhook(setup, { wamid, status: "read", customer, messageId: queued.id });
    const read = await waitForStatus(api, setup.live, queued.id, "read");
    await statusWebhook(setup, { wamid, status: "delivered", customer, messageId: queued.id });
    await statusWebhook(setup, { wamid, status: "sent", customer, messageId: queued.id });
    await waitForWebhookJobs(api);

    expect((await setup.live.get(`/messages/${queued.id}`)).body).toEqual(read);
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent", "message.read"]);
  });

  it("fails a sent message on a failed status, with Meta's code and title, and message.failed", async () => {
    const setup = await whatsappChannel();
    const { customer, conversationId } = await customerWrites(setup);
    const { queued, wamid } = await sentReply(setup, conversationId);

    await statusWebhook(
      setup,
      { wamid, status: "failed", customer, messageId: queued.id },
      { code: 131026, title: "Message undeliverable" },
    );
    const failed = await waitForStatus(api, setup.live, queued.id, "failed");
    expect(failed.error).toEqual({ code: "131026", message: "Message undeliverable" });
    const event = await onlyEvent(api, queued.id, "message.failed");
    expect(event.data.message).toEqual(failed);
    expect(event.data.message.error).toEqual({ code: "131026", message: "Message undeliverable" });

    // A failed message stays failed, whatever comes after.
    await statusWebhook(setup, { wamid, status: "delivered", customer, messageId: queued.id });
    await statusWebhook(setup, { wamid, status: "read", customer });
    await waitForWebhookJobs(api);
    expect((await setup.live.get(`/messages/${queued.id}`)).body).toEqual(failed);
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent", "message.failed"]);
  });

  it("finds the message by its wamid alone, when the status carries no callback data", async () => {
    const setup = await whatsappChannel();
    const { customer, conversationId } = await customerWrites(setup);
    const { queued, wamid } = await sentReply(setup, conversationId);
    await statusWebhook(setup, { wamid, status: "delivered", customer });
    await waitForStatus(api, setup.live, queued.id, "delivered");
  });

  it("changes nothing for a status about an unknown wamid, and the job still completes", async () => {
    const setup = await whatsappChannel();
    const { customer, message: inbound, conversationId } = await customerWrites(setup);
    const { queued } = await sentReply(setup, conversationId);
    const other = await whatsappChannel();
    const foreign = await customerWrites(other);
    const { queued: foreignMessage, wamid: foreignWamid } = await sentReply(other, foreign.conversationId);
    const before = await conversationMessages(setup.live, conversationId);
    const eventsBefore = await storedEvents(api, setup.org.id, "live");

    // An unknown wamid; an inbound message's wamid; another organization's message (by wamid and by callback data).
    await statusWebhook(setup, { wamid: `wamid.${randomSecret("unknown")}`, status: "read", customer });
    await statusWebhook(setup, { wamid: await providerIdOf(api, inbound.id), status: "read", customer });
    await statusWebhook(setup, { wamid: foreignWamid, status: "read", customer, messageId: foreignMessage.id });
    await waitForWebhookJobs(api);

    expect(await conversationMessages(setup.live, conversationId)).toEqual(before);
    expect(await storedEvents(api, setup.org.id, "live")).toEqual(eventsBefore);
    expect(await statusOf(api, foreignMessage.id)).toBe("sent");
    expect(await statusOf(api, queued.id)).toBe("sent");

    // The queue is not stuck: the next status applies.
    await statusWebhook(setup, { wamid: await providerIdOf(api, queued.id), status: "delivered", customer });
    await waitForStatus(api, setup.live, queued.id, "delivered");
  });
});

describe("pace", () => {
  it("sends at most 80 messages a second on one number: a burst leaves 12.5 ms apart, in order", async () => {
    const setup = await whatsappChannel();
    const { conversationId } = await customerWrites(setup);
    const queued = [];
    for (let i = 0; i < 12; i++) {
      queued.push(await postMessage(setup.live, { conversation_id: conversationId, type: "text", text: `Burst ${i}` }));
    }
    for (const message of queued) await waitForStatus(api, setup.live, message.id, "sent");
    const arrivals = queued
      .map((message) => sendRequestFor(setup.channel, message.id)?.arrivedAt ?? 0)
      .sort((a, b) => a - b);
    // The sends leave 1000/80 = 12.5 ms apart. Their arrival here is when this process's
    // event loop takes them, up to a pace's worth late on a busy machine, which can bunch
    // two neighbours: judged over three gaps (37.5 ms at the pace) and over the burst, each
    // with one pace of slack. A burst sent at once, or at twice the pace, fails both.
    const pace = 1000 / 80;
    for (let i = 3; i < arrivals.length; i++)
      expect((arrivals[i] ?? 0) - (arrivals[i - 3] ?? 0)).toBeGreaterThanOrEqual(3 * pace - pace);
    expect((arrivals.at(-1) ?? 0) - (arrivals[0] ?? 0)).toBeGreaterThanOrEqual(11 * pace - pace);
  });
});

describe("send failures", () => {
  it.each([
    ["131026", "(#131026) Message Undeliverable.", () => metaErrors.undeliverable()],
    ["100", "(#100) Invalid parameter", () => metaErrors.invalidParameter()],
    ["190", "Error validating access token: Session has expired", () => metaErrors.tokenExpired()],
  ])(
    "fails the message on Meta's permanent refusal %s, with Meta's code, without retrying",
    async (code, message, failure) => {
      const setup = await whatsappChannel();
      const { customer, conversationId } = await customerWrites(setup);
      meta.simulator.failNext(1, failure(), (request) => bodyOf(request)?.to === customer);
      const queued = await postMessage(setup.live, { conversation_id: conversationId, type: "text", text: "Hello?" });

      const failed = await waitForStatus(api, setup.live, queued.id, "failed");
      expect(failed.error.code).toBe(code);
      expect(failed.error.message).toContain(message);
      const event = await onlyEvent(api, queued.id, "message.failed");
      expect(event.data.message).toEqual(failed);
      expect(await eventTypes(api, queued.id)).toEqual(["message.failed"]);
      expect(sendRequests(meta.simulator, setup.channel.accountId)).toHaveLength(1);
    },
  );

  it("retries a temporary fault (HTTP 500, rate limit 130429) with backoff and ends sent", async () => {
    const setup = await whatsappChannel();
    const outage = await customerWrites(setup);
    const throttled = await customerWrites(setup);
    meta.simulator.failNext(1, metaErrors.unexpected(), (request) => bodyOf(request)?.to === outage.customer);
    meta.simulator.failNext(
      1,
      metaError(130429, "(#130429) Rate limit hit", { status: 400 }),
      (request) => bodyOf(request)?.to === throttled.customer,
    );
    const first = await postMessage(setup.live, { conversation_id: outage.conversationId, type: "text", text: "A" });
    const second = await postMessage(setup.live, {
      conversation_id: throttled.conversationId,
      type: "text",
      text: "B",
    });

    for (const [queued, customer] of [
      [first, outage.customer],
      [second, throttled.customer],
    ] as const) {
      await waitForStatus(api, setup.live, queued.id, "sent", 20_000);
      const attempts = sendRequests(meta.simulator, setup.channel.accountId).filter(
        (request) => bodyOf(request)?.to === customer,
      );
      expect(attempts).toHaveLength(2);
      expect(attempts.map((request) => bodyOf(request).biz_opaque_callback_data)).toEqual([queued.id, queued.id]);
      expect(await eventTypes(api, queued.id)).toEqual(["message.sent"]);
    }
  }, 30_000);
});

describe("the 24-hour session window", () => {
  it("fails a text to a contact who never wrote with 131047, without calling Meta; a reply after they write goes out", async () => {
    const setup = await whatsappChannel();
    const customer = waId();
    const contact = await setup.live.post("/contacts", { body: { name: "Ada", phone: `+${customer}` } });
    expect(contact.status, JSON.stringify(contact.body)).toBe(201);
    const conversation = await setup.live.post("/conversations", {
      body: { contact_id: contact.body.id, channel_id: setup.channel.id },
    });
    expect(conversation.status, JSON.stringify(conversation.body)).toBe(201);

    const queued = await postMessage(setup.live, {
      conversation_id: conversation.body.id,
      type: "text",
      text: "Your appointment is tomorrow",
    });
    const failed = await waitForStatus(api, setup.live, queued.id, "failed");
    expect(failed.error).toEqual({
      code: "131047",
      message: "Re-engagement message: more than 24 hours have passed since the customer last replied",
    });
    expect(await eventTypes(api, queued.id)).toEqual(["message.failed"]);
    expect(sendRequests(meta.simulator, setup.channel.accountId)).toEqual([]);

    // The contact writes: the message lands in the conversation the business started, and a reply goes out.
    const inbound = await customerWrites(setup, customer, "Who is this?");
    expect(inbound.conversationId).toBe(conversation.body.id);
    // The contact and conversation the API created, and no others.
    const created = (await storedEvents(api, setup.org.id, "live")).filter(
      (event) => event.type === "contact.created" || event.type === "conversation.created",
    );
    expect(created.map((event) => event.data.contact?.id ?? event.data.conversation?.id)).toEqual([
      contact.body.id,
      conversation.body.id,
    ]);
    const { queued: reply } = await sentReply(setup, conversation.body.id, "Your dentist.");
    expect(sendRequestFor(setup.channel, reply.id)?.body).toMatchObject({ to: customer });
    // The failed message is never resent.
    expect(await statusOf(api, queued.id)).toBe("failed");
    expect(sendRequests(meta.simulator, setup.channel.accountId)).toHaveLength(1);
  });
  it("takes the reply of a contact whose phone the business wrote with spaces and dashes", async () => {
    const setup = await whatsappChannel();
    const customer = waId();
    const formatted = `+${customer.slice(0, 1)} ${customer.slice(1, 4)}-${customer.slice(4, 7)}-${customer.slice(7)}`;
    const contact = await setup.live.post("/contacts", { body: { name: "Ada", phone: formatted } });
    expect(contact.status, JSON.stringify(contact.body)).toBe(201);
    const conversation = await setup.live.post("/conversations", {
      body: { contact_id: contact.body.id, channel_id: setup.channel.id },
    });
    expect(conversation.status, JSON.stringify(conversation.body)).toBe(201);

    const inbound = await customerWrites(setup, customer, "Hi, you called?");
    expect(inbound.conversationId).toBe(conversation.body.id);
    const contacts = await setup.live.get("/contacts");
    expect(contacts.body.data.map((row: { id: string }) => row.id)).toEqual([contact.body.id]);
    const { queued } = await sentReply(setup, conversation.body.id, "Yes, about your order.");
    expect(sendRequestFor(setup.channel, queued.id)?.body).toMatchObject({ to: customer });
  });
});

describe("outbound media", () => {
  it("sends an image by a signed link to /files/{id}, which serves the bytes without a key", async () => {
    const setup = await whatsappChannel();
    const { conversationId } = await customerWrites(setup);
    const png = await makeImage("png", { width: 20, height: 20, exif: null });
    const uploaded = await upload(api, setup.org.live, { bytes: png, type: "image/png", filename: "receipt.png" });
    expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(201);
    const attachment = uploaded.body;

    const queued = await postMessage(setup.live, {
      conversation_id: conversationId,
      type: "image",
      attachment_id: attachment.id,
      text: "Your receipt",
    });
    await waitForStatus(api, setup.live, queued.id, "sent");
    const request = sendRequestFor(setup.channel, queued.id);
    const body = bodyOf(request);
    expect(body).toMatchObject({ messaging_product: "whatsapp", type: "image", image: { caption: "Your receipt" } });
    const publicBase = api.baseUrl.replace(/\/v1$/, "");
    const link = new URL(body.image.link);
    expect(`${link.origin}${link.pathname}`).toBe(`${publicBase}/files/${attachment.id}`);
    expect(link.searchParams.get("expires")).toMatch(/^\d+$/);
    expect(Number(link.searchParams.get("expires")) * 1000).toBeGreaterThan(Date.now());
    expect(link.searchParams.get("signature")).toMatch(/^[\w-]{20,}$/);

    // Meta fetches the link without any key.
    const fetched = await fetch(link);
    expect(fetched.status).toBe(200);
    expect(fetched.headers.get("content-type")).toBe("image/png");
    const stored = await download(setup.org.live, attachment.url);
    expect(stored.status).toBe(200);
    expect(Buffer.from(await fetched.arrayBuffer()).equals(stored.bytes)).toBe(true);

    // Altered, the link is not found: another signature, another id, no signature.
    const signature = link.searchParams.get("signature") as string;
    const tampered = new URL(link);
    tampered.searchParams.set("signature", `${signature.slice(0, -1)}${signature.endsWith("A") ? "B" : "A"}`);
    const otherUpload = await upload(api, setup.org.live, { bytes: png, type: "image/png", filename: "other.png" });
    const otherId = new URL(link);
    otherId.pathname = `/files/${otherUpload.body.id}`;
    const laterExpiry = new URL(link);
    laterExpiry.searchParams.set("expires", String(Number(link.searchParams.get("expires")) + 3600));
    const unsigned = new URL(link);
    unsigned.search = "";
    for (const url of [tampered, otherId, laterExpiry, unsigned]) {
      const response = await fetch(url);
      const text = await response.text();
      expect(response.status, url.toString()).toBe(404);
      expectError(
        { status: response.status, headers: response.headers, body: JSON.parse(text) },
        404,
        "attachment_not_found",
      );
    }
  });

  it("sends a document with its file name", async () => {
    const setup = await whatsappChannel();
    const { conversationId } = await customerWrites(setup);
    const pdf = makePdf("Quote 12");
    const uploaded = await upload(api, setup.org.live, {
      bytes: pdf,
      type: "application/pdf",
      filename: "quote-12.pdf",
    });
    expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(201);
    const queued = await postMessage(setup.live, {
      conversation_id: conversationId,
      type: "document",
      attachment_id: uploaded.body.id,
    });
    await waitForStatus(api, setup.live, queued.id, "sent");
    const body = bodyOf(sendRequestFor(setup.channel, queued.id));
    expect(body).toMatchObject({ type: "document", document: { filename: "quote-12.pdf" } });
    expect(body.document).not.toHaveProperty("caption");
    const fetched = await fetch(body.document.link);
    expect(fetched.status).toBe(200);
    expect(Buffer.from(await fetched.arrayBuffer()).equals(pdf)).toBe(true);
  });
});
