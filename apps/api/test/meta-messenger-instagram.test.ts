import {
  instagramMessage,
  instagramRead,
  messengerDelivery,
  messengerRead,
  messengerTextMessage,
  SIMULATOR_API_VERSION,
} from "@parley/channels/testing";
import { describe, expect, it } from "vitest";
import { type Client, eventTypes, onlyEvent, statusOf, waitForStatus } from "./delivery-helpers.js";
import { download, makeImage } from "./files.js";
import { setupOrganization, storedEvents, type TestOrganization, useTestApi, useTestWorker } from "./harness.js";
import {
  bodyOf,
  connectMetaChannel,
  deliverWebhook,
  type MetaChannel,
  type MetaChannelType,
  messagesByProviderId,
  postMessage,
  providerIdOf,
  randomSecret,
  scopedId,
  sendRequests,
  useMetaSimulator,
  waitForInbound,
  waitForWebhookJobs,
} from "./meta-helpers.js";

/**
 * Live Messenger and Instagram channels against the Graph API simulator: inbound
 * messages from scoped ids, replies by the Send API, and the receipts each gives
 * (Messenger: deliveries and read watermarks; Instagram: reads by mid, no deliveries).
 */
const meta = useMetaSimulator();
const api = useTestApi({}, { ownDatabase: true });
useTestWorker(api, () => ({ meta: meta.simulator.options() }));

interface Setup {
  org: TestOrganization;
  live: Client;
  channel: MetaChannel;
}

async function connected(type: MetaChannelType): Promise<Setup> {
  const { org, live } = await setupOrganization(api);
  return { org, live, channel: await connectMetaChannel(api, meta.simulator, org.id, type) };
}

function newMid(): string {
  return `m_${randomSecret("mid")}`;
}

/** The person writes on Messenger: returns the stored message and the conversation. */
async function messengerWrites(setup: Setup, psid = scopedId(), text = "Do you ship to Lyon?") {
  const mid = newMid();
  await deliverWebhook(
    api,
    messengerTextMessage({ pageId: setup.channel.accountId, psid, mid, text }),
    setup.channel.appSecret,
  );
  const message = await waitForInbound(api, setup.live, mid);
  return { psid, message, conversationId: message.conversation_id as string };
}

async function instagramWrites(setup: Setup, igsid = scopedId(), text = "Is this in stock?") {
  const mid = `aWdf${randomSecret("mid")}`;
  await deliverWebhook(
    api,
    instagramMessage({ accountId: setup.channel.accountId, igsid, mid, text }),
    setup.channel.appSecret,
  );
  const message = await waitForInbound(api, setup.live, mid);
  return { igsid, message, conversationId: message.conversation_id as string };
}

function onlySendRequest(setup: Setup) {
  const requests = sendRequests(meta.simulator, setup.channel.accountId);
  expect(requests).toHaveLength(1);
  return requests[0];
}

describe("Messenger", () => {
  it("creates a contact with metadata.messenger_id and a conversation for a message from a PSID", async () => {
    const setup = await connected("messenger");
    const { psid, message, conversationId } = await messengerWrites(setup, scopedId(), "Do you ship to Lyon?");
    expect(message).toMatchObject({ direction: "inbound", type: "text", text: "Do you ship to Lyon?", status: null });
    const conversation = (await setup.live.get(`/conversations/${conversationId}`)).body;
    expect(conversation).toMatchObject({ channel_id: setup.channel.id, channel_type: "messenger" });
    const contact = (await setup.live.get(`/contacts/${conversation.contact_id}`)).body;
    expect(contact).toMatchObject({ metadata: { messenger_id: psid }, phone: null, email: null });

    const events = await storedEvents(api, setup.org.id, "live");
    expect(events.map((event) => event.type)).toEqual(["contact.created", "conversation.created", "message.received"]);
    expect(events[0]?.data.contact).toMatchObject({ id: contact.id, metadata: { messenger_id: psid } });
    expect(events[2]?.data.message).toEqual(message);

    // The same person again: the same conversation.
    const again = await messengerWrites(setup, psid, "Hello?");
    expect(again.conversationId).toBe(conversationId);
  });

  it("ignores the page's own echoes", async () => {
    const setup = await connected("messenger");
    const { psid } = await messengerWrites(setup);
    const echo = newMid();
    await deliverWebhook(
      api,
      messengerTextMessage({
        pageId: setup.channel.accountId,
        psid,
        mid: echo,
        text: "Sent from the Page inbox",
        echo: true,
      }),
      setup.channel.appSecret,
    );
    await waitForWebhookJobs(api);
    expect(await messagesByProviderId(api, echo)).toEqual([]);
  });

  it("stores a picture from Meta's CDN without showing it the token", async () => {
    const setup = await connected("messenger");
    const bytes = await makeImage("png", { width: 12, height: 12, exif: null });
    const hosted = meta.simulator.addMedia(bytes, "image/png", { public: true });
    const mid = newMid();
    await deliverWebhook(
      api,
      messengerTextMessage({
        pageId: setup.channel.accountId,
        psid: scopedId(),
        mid,
        attachments: [{ type: "image", url: hosted.url }],
      }),
      setup.channel.appSecret,
    );
    const message = await waitForInbound(api, setup.live, mid);
    expect(message).toMatchObject({ type: "image", attachment: { content_type: "image/png", size: bytes.length } });
    const content = await download(setup.org.live, message.attachment.url);
    expect(content.bytes.equals(bytes)).toBe(true);
    const fetches = meta.simulator.requests.filter((request) => request.path === `/media/${hosted.id}`);
    expect(fetches).toHaveLength(1);
    expect(fetches[0]?.headers.authorization).toBeUndefined();
  });

  it("replies to /{page_id}/messages as a RESPONSE, then delivered by mid and read by watermark", async () => {
    const setup = await connected("messenger");
    const { psid, conversationId } = await messengerWrites(setup);
    const queued = await postMessage(setup.live, {
      conversation_id: conversationId,
      type: "text",
      text: "Yes, we do.",
    });
    const sent = await waitForStatus(api, setup.live, queued.id, "sent");

    const request = onlySendRequest(setup);
    expect(request?.path).toBe(`/${SIMULATOR_API_VERSION}/${setup.channel.accountId}/messages`);
    expect(request?.headers.authorization).toBe(`Bearer ${meta.simulator.accessToken}`);
    expect(request?.body).toMatchObject({
      recipient: { id: psid },
      message: { text: "Yes, we do." },
      messaging_type: "RESPONSE",
    });
    expect((await onlyEvent(api, queued.id, "message.sent")).data.message).toEqual(sent);
    const mid = await providerIdOf(api, queued.id);
    expect(mid).toMatch(/^m_/);

    await deliverWebhook(
      api,
      messengerDelivery({ pageId: setup.channel.accountId, psid, mids: [mid], watermark: new Date() }),
      setup.channel.appSecret,
    );
    const delivered = await waitForStatus(api, setup.live, queued.id, "delivered");
    await deliverWebhook(
      api,
      messengerRead({ pageId: setup.channel.accountId, psid, watermark: new Date() }),
      setup.channel.appSecret,
    );
    const read = await waitForStatus(api, setup.live, queued.id, "read");
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent", "message.delivered", "message.read"]);
    expect((await onlyEvent(api, queued.id, "message.delivered")).data.message).toEqual(delivered);
    expect((await onlyEvent(api, queued.id, "message.read")).data.message).toEqual(read);
  });

  it("applies a watermark to the messages sent up to it, not to later ones", async () => {
    const setup = await connected("messenger");
    const { psid, conversationId } = await messengerWrites(setup);
    const before = await postMessage(setup.live, { conversation_id: conversationId, type: "text", text: "One" });
    await waitForStatus(api, setup.live, before.id, "sent");
    const watermark = new Date(Date.parse(before.created_at) + 1);
    const after = await postMessage(setup.live, { conversation_id: conversationId, type: "text", text: "Two" });
    expect(Date.parse(after.created_at)).toBeGreaterThan(watermark.getTime());
    await waitForStatus(api, setup.live, after.id, "sent");

    await deliverWebhook(
      api,
      messengerDelivery({ pageId: setup.channel.accountId, psid, watermark }),
      setup.channel.appSecret,
    );
    await waitForStatus(api, setup.live, before.id, "delivered");
    await deliverWebhook(
      api,
      messengerRead({ pageId: setup.channel.accountId, psid, watermark }),
      setup.channel.appSecret,
    );
    await waitForStatus(api, setup.live, before.id, "read");
    await waitForWebhookJobs(api);
    expect(await statusOf(api, after.id)).toBe("sent");
    expect(await eventTypes(api, after.id)).toEqual(["message.sent"]);

    // Another person's read changes nothing of this conversation.
    await deliverWebhook(
      api,
      messengerRead({ pageId: setup.channel.accountId, psid: scopedId(), watermark: new Date() }),
      setup.channel.appSecret,
    );
    await waitForWebhookJobs(api);
    expect(await statusOf(api, after.id)).toBe("sent");
  });

  it("fails a message in a conversation the person never wrote in: no address to send to", async () => {
    const setup = await connected("messenger");
    const contact = await setup.live.post("/contacts", { body: { name: "Nobody" } });
    const conversation = await setup.live.post("/conversations", {
      body: { contact_id: contact.body.id, channel_id: setup.channel.id },
    });
    expect(conversation.status, JSON.stringify(conversation.body)).toBe(201);
    const queued = await postMessage(setup.live, { conversation_id: conversation.body.id, type: "text", text: "Hi" });
    const failed = await waitForStatus(api, setup.live, queued.id, "failed");
    expect(failed.error.code).toBe("recipient_unknown");
    expect(await eventTypes(api, queued.id)).toEqual(["message.failed"]);
    expect(sendRequests(meta.simulator, setup.channel.accountId)).toEqual([]);
  });
});

describe("Instagram", () => {
  it("creates a contact with metadata.instagram_id, replies as the linked Page (/me/messages), and reads by mid", async () => {
    const setup = await connected("instagram");
    const { igsid, message, conversationId } = await instagramWrites(setup, scopedId(), "Is this in stock?");
    expect(message).toMatchObject({ direction: "inbound", type: "text", text: "Is this in stock?" });
    const conversation = (await setup.live.get(`/conversations/${conversationId}`)).body;
    expect(conversation).toMatchObject({ channel_id: setup.channel.id, channel_type: "instagram" });
    const contact = (await setup.live.get(`/contacts/${conversation.contact_id}`)).body;
    expect(contact.metadata).toEqual({ instagram_id: igsid });
    expect((await storedEvents(api, setup.org.id, "live")).map((event) => event.type)).toEqual([
      "contact.created",
      "conversation.created",
      "message.received",
    ]);

    const queued = await postMessage(setup.live, { conversation_id: conversationId, type: "text", text: "It is!" });
    await waitForStatus(api, setup.live, queued.id, "sent");
    // Sent as the linked Page, whose token the channel holds: `me` is that Page.
    const requests = meta.simulator.requests.filter((request) => bodyOf(request)?.recipient?.id === igsid);
    expect(requests).toHaveLength(1);
    const request = requests[0];
    expect(request?.method).toBe("POST");
    expect(request?.path).toBe(`/${SIMULATOR_API_VERSION}/me/messages`);
    expect(request?.headers.authorization).toBe(`Bearer ${meta.simulator.accessToken}`);
    expect(request?.body).toEqual({ recipient: { id: igsid }, message: { text: "It is!" } });
    expect(bodyOf(request)).not.toHaveProperty("messaging_type");

    const mid = await providerIdOf(api, queued.id);
    await deliverWebhook(
      api,
      instagramRead({ accountId: setup.channel.accountId, igsid, mid }),
      setup.channel.appSecret,
    );
    const read = await waitForStatus(api, setup.live, queued.id, "read");
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent", "message.read"]);
    expect((await onlyEvent(api, queued.id, "message.read")).data.message).toEqual(read);
  });

  it("applies a read of an unknown mid to nothing", async () => {
    const setup = await connected("instagram");
    const { igsid, conversationId } = await instagramWrites(setup);
    const queued = await postMessage(setup.live, { conversation_id: conversationId, type: "text", text: "Hi" });
    await waitForStatus(api, setup.live, queued.id, "sent");
    await deliverWebhook(
      api,
      instagramRead({ accountId: setup.channel.accountId, igsid, mid: `aWdf${randomSecret("unknown")}` }),
      setup.channel.appSecret,
    );
    await waitForWebhookJobs(api);
    expect(await statusOf(api, queued.id)).toBe("sent");
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent"]);
  });
});
