import { CredentialCheckError, checkCredentials } from "@parley/channels";
import { metaErrors, whatsappTextMessage } from "@parley/channels/testing";
import { describe, expect, it } from "vitest";
import {
  ChannelStateError,
  disconnectChannel,
  reconnectChannel,
  updateChannelSettings,
} from "../src/channels/lifecycle.js";
import { connectChannel } from "../src/channels/service.js";
import { type Client, waitForStatus } from "./delivery-helpers.js";
import {
  connectEmailChannel,
  customerAddress,
  deliverOverSmtp,
  fakeDns,
  newMessageId,
  rawEmail,
  useSmtpSink,
} from "./email-helpers.js";
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
  conversationMessages,
  deliverWebhook,
  metaId,
  metaWebhookJobs,
  postMessage,
  randomSecret,
  sendRequests,
  useMetaSimulator,
  waId,
  waitForInbound,
} from "./meta-helpers.js";
import { startSession, visitor, webchatChannel } from "./webchat-helpers.js";

/**
 * The life of a connected channel (issue 24 items 5, 6, 7 and 9): settings changed in
 * place, checked with the provider first; a token Meta reports expired marks the channel
 * `needs_attention`; a disconnected channel sends and receives nothing, and stays readable.
 */
const relay = useSmtpSink();
const meta = useMetaSimulator();
const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "100000" }, { ownDatabase: true });
const dns = fakeDns();
const worker = useTestWorker(api, () => ({
  meta: meta.simulator.options(),
  smtpInbound: { port: 0, host: "127.0.0.1", emailAuthentication: { resolver: dns } },
}));

interface Live {
  org: TestOrganization;
  live: Client;
  client: Client;
  channelId: string;
  phoneNumberId: string;
  appSecret: string;
}

/** A live WhatsApp channel on the simulator, connected (unchecked) with `accessToken`. */
async function whatsapp(accessToken: string): Promise<Live> {
  const { org, live, client } = await setupOrganization(api);
  const phoneNumberId = metaId();
  const appSecret = randomSecret("appsecret");
  const channel = await connectChannel(api.context.db, api.context.secretBox, {
    organizationId: org.id,
    environment: "live",
    type: "whatsapp",
    name: "Live WhatsApp",
    provider: "meta",
    settings: { phone_number_id: phoneNumberId, access_token: accessToken, app_secret: appSecret, verify_token: "v" },
  });
  return { org, live, client, channelId: channel.id, phoneNumberId, appSecret };
}

async function customerWrites(setup: Live, customer = waId()) {
  const id = `wamid.${randomSecret("in")}`;
  const payload = whatsappTextMessage({ phoneNumberId: setup.phoneNumberId, from: customer, id, text: "Hello?" });
  await deliverWebhook(api, payload, setup.appSecret);
  const message = await waitForInbound(api, setup.live, id);
  return { customer, conversationId: message.conversation_id as string };
}

/** What `pnpm admin update-channel` does, in process, its provider check against the simulator. */
function update(channelId: string, settings: Record<string, unknown>) {
  return updateChannelSettings(api.context.db, api.context.secretBox, {
    channelId,
    settings,
    check: (row, merged) => checkCredentials(row.type, row.provider, merged, { meta: meta.simulator.options() }),
  });
}

async function sealedSettings(channelId: string) {
  const [row] = await api.client.sql<{ settings: unknown; secret_settings: string | null }[]>`
    select settings, secret_settings from channels where id = ${channelId}`;
  return row;
}

async function channelGauge(status: string): Promise<number> {
  const text = (await api.context.metrics?.registry.metrics()) ?? "";
  const line = text
    .split("\n")
    .find((entry) => entry.startsWith(`parley_channels{channel_type="whatsapp",status="${status}"}`));
  return Number(line?.split(" ").pop());
}

describe("a Meta token reported expired, then rotated with update-channel", () => {
  it("marks the channel needs_attention on code 190, and fresh credentials make it active; the next send uses them", async () => {
    const setup = await whatsapp("EAAG-expired-token");
    meta.simulator.addAccount(setup.phoneNumberId);
    const { customer, conversationId } = await customerWrites(setup);
    const before = (await setup.live.get(`/channels/${setup.channelId}`)).body;
    expect(before).toMatchObject({ status: "active", status_reason: null });

    const refused = await postMessage(setup.live, { conversation_id: conversationId, type: "text", text: "One" });
    const failed = await waitForStatus(api, setup.live, refused.id, "failed");
    expect(failed.error.code).toBe("190");
    const attention = (await setup.live.get(`/channels/${setup.channelId}`)).body;
    expect(attention.status).toBe("needs_attention");
    expect(attention.status_reason).toMatch(/190/);
    expect(await channelGauge("needs_attention")).toBeGreaterThanOrEqual(1);

    // Unchecked and no new secret: nothing says the token works now.
    const unrelated = await updateChannelSettings(api.context.db, api.context.secretBox, {
      channelId: setup.channelId,
      settings: { business_account_id: "102290129340398" },
    });
    expect(unrelated.status).toBe("needs_attention");
    const updated = await update(setup.channelId, { access_token: meta.simulator.accessToken });
    expect(updated).toMatchObject({ id: setup.channelId, status: "active", status_reason: null });
    expect((await setup.live.get(`/channels/${setup.channelId}`)).body.status).toBe("active");

    const sent = await postMessage(setup.live, { conversation_id: conversationId, type: "text", text: "Two" });
    await waitForStatus(api, setup.live, sent.id, "sent");
    const request = sendRequests(meta.simulator, setup.phoneNumberId).find(
      (entry) => bodyOf(entry)?.to === customer && bodyOf(entry)?.text?.body === "Two",
    );
    expect(request?.headers.authorization).toBe(`Bearer ${meta.simulator.accessToken}`);
    // The same channel, conversation and history: nothing was lost with the old token.
    const history = await conversationMessages(setup.live, conversationId);
    expect(history.map((message) => message.text)).toEqual(["Hello?", "One", "Two"]);
  });
});

describe("update-channel checks the credentials with the provider before storing", () => {
  it("refuses a token Meta does not accept with Meta's answer, and stores nothing", async () => {
    const setup = await whatsapp(meta.simulator.accessToken);
    meta.simulator.addAccount(setup.phoneNumberId);
    const stored = await sealedSettings(setup.channelId);
    const error = await update(setup.channelId, { access_token: "EAAG-wrong" }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CredentialCheckError);
    expect((error as Error).message).toMatch(/Invalid OAuth access token.*code 190/);
    expect((error as Error).message).not.toContain("EAAG-wrong");
    expect(await sealedSettings(setup.channelId)).toEqual(stored);
  });

  it("refuses a phone number id the token cannot read, and settings the type's schema refuses", async () => {
    const setup = await whatsapp(meta.simulator.accessToken);
    const stored = await sealedSettings(setup.channelId);
    // Never added to the simulator: Graph answers 100 "does not exist ... missing permissions".
    const unknown = await update(setup.channelId, { phone_number_id: metaId() }).catch((caught: unknown) => caught);
    expect((unknown as Error).message).toMatch(/does not exist.*code 100/);
    await expect(update(setup.channelId, { phone_number_id: "not a number" })).rejects.toThrow(/phone_number_id/);
    await expect(update(setup.channelId, { acess_token: "typo" })).rejects.toThrow(
      /Unknown whatsapp setting 'acess_token'/,
    );
    expect(await sealedSettings(setup.channelId)).toEqual(stored);
  });

  it("re-seals a rotated SMTP password: the next reply logs in with it", async () => {
    const { org, live } = await setupOrganization(api);
    const address = `support-${randomSecret("a").slice(-8)}@acme.test`;
    const channel = await connectEmailChannel(api, org.id, address, withCredentials(relay.sink.url, "olduser", "old"));
    const before = await sealedSettings(channel.id);
    const updated = await update(channel.id, { smtp_url: withCredentials(relay.sink.url, "rotated", "n3w-pass") });
    expect(updated.status).toBe("active");
    const after = await sealedSettings(channel.id);
    expect(after?.settings).toEqual(before?.settings);
    expect(after?.secret_settings).not.toEqual(before?.secret_settings);
    expect(after?.secret_settings).not.toContain("n3w-pass");
    // The check logged in once (EHLO + AUTH); the reply logs in again with the same user.
    expect(relay.sink.logins).toContain("rotated");
    const customer = customerAddress("ada");
    await deliverOverSmtp(
      worker,
      { from: customer, to: address },
      rawEmail({ from: customer, to: address, subject: "Hi", text: "Hello", messageId: newMessageId() }),
    );
    const list = await live.get("/conversations", { query: { channel_id: channel.id } });
    const conversationId = list.body.data[0]?.id as string;
    const logins = relay.sink.logins.length;
    const reply = await postMessage(live, { conversation_id: conversationId, type: "text", text: "Thanks" });
    await waitForStatus(api, live, reply.id, "sent");
    expect(relay.sink.logins.slice(logins)).toContain("rotated");
  });
});

function withCredentials(url: string, user: string, pass: string): string {
  const parsed = new URL(url);
  parsed.username = user;
  parsed.password = pass;
  return parsed.toString();
}

describe("disconnect-channel and reconnect-channel", () => {
  it("a disconnected channel refuses sends with 409, drops its webhooks, stays readable, and records both events", async () => {
    const setup = await whatsapp(meta.simulator.accessToken);
    const { customer, conversationId } = await customerWrites(setup);

    const disconnected = await disconnectChannel(api.context.db, setup.channelId);
    expect(disconnected).toMatchObject({ status: "disconnected", status_reason: expect.stringMatching(/operator/) });
    await expect(disconnectChannel(api.context.db, setup.channelId)).rejects.toBeInstanceOf(ChannelStateError);

    const send = await setup.live.post("/messages", {
      body: { conversation_id: conversationId, type: "text", text: "No" },
    });
    expectError(send, 409, "invalid_state");
    expect(send.body.error.message).toMatch(/disconnected/);

    // Meta's delivery is acknowledged (200, so Meta does not retry) and dropped.
    const id = `wamid.${randomSecret("in")}`;
    const payload = whatsappTextMessage({ phoneNumberId: setup.phoneNumberId, from: customer, id, text: "Anyone?" });
    await deliverWebhook(api, payload, setup.appSecret);
    expect(await metaWebhookJobs(api)).toEqual([]);
    const [stored] = await api.client.sql`select count(*)::int as n from messages where provider_message_id = ${id}`;
    expect(stored?.n).toBe(0);

    const read = await setup.live.get(`/channels/${setup.channelId}`);
    expect(read.body).toMatchObject({ status: "disconnected" });
    expect((await conversationMessages(setup.live, conversationId)).map((message) => message.text)).toEqual(["Hello?"]);

    const reconnected = await reconnectChannel(api.context.db, setup.channelId);
    expect(reconnected).toMatchObject({ status: "active", status_reason: null });
    await expect(reconnectChannel(api.context.db, setup.channelId)).rejects.toBeInstanceOf(ChannelStateError);
    const again = await postMessage(setup.live, { conversation_id: conversationId, type: "text", text: "Back" });
    await waitForStatus(api, setup.live, again.id, "sent");

    const events = (await storedEvents(api, setup.org.id, "live")).filter((event) => event.type.startsWith("channel."));
    expect(events.map((event) => [event.type, event.data.channel.id, event.data.channel.status])).toEqual([
      ["channel.disconnected", setup.channelId, "disconnected"],
      ["channel.reconnected", setup.channelId, "active"],
    ]);
  });

  it("a message queued before the disconnect is not handed over after it: it fails with channel_disconnected", async () => {
    const setup = await whatsapp(meta.simulator.accessToken);
    const { customer, conversationId } = await customerWrites(setup);
    // The first attempt meets an outage (retried later); the channel is disconnected before the retry.
    meta.simulator.failNext(1, metaErrors.serviceUnavailable(), (request) => bodyOf(request)?.to === customer);
    const queued = await postMessage(setup.live, { conversation_id: conversationId, type: "text", text: "Late" });
    await eventually(
      async () => sendRequests(meta.simulator, setup.phoneNumberId).length,
      (count) => count >= 1,
    );
    await disconnectChannel(api.context.db, setup.channelId);
    const failed = await waitForStatus(api, setup.live, queued.id, "failed");
    expect(failed.error).toEqual({ code: "channel_disconnected", message: expect.stringContaining(setup.channelId) });
    expect(sendRequests(meta.simulator, setup.phoneNumberId)).toHaveLength(1);
  });

  it("a disconnected email channel accepts and drops inbound mail, and refuses the HTTP route with 409", async () => {
    const { org, live } = await setupOrganization(api);
    const address = `help-${randomSecret("b").slice(-8)}@acme.test`;
    const channel = await connectEmailChannel(api, org.id, address, relay.sink.url);
    await disconnectChannel(api.context.db, channel.id);
    const customer = customerAddress("grace");
    const messageId = newMessageId();
    await deliverOverSmtp(
      worker,
      { from: customer, to: address },
      rawEmail({ from: customer, to: address, subject: "Hi", text: "Hello", messageId }),
    );
    const [stored] = await api.client.sql`select count(*)::int as n from messages where organization_id = ${org.id}`;
    expect(stored?.n).toBe(0);
    const http = await live.post(`/channels/${channel.id}/inbound-email`, {
      rawBody: rawEmail({ from: customer, to: address, subject: "Hi", text: "Hello", messageId: newMessageId() }),
      headers: { "content-type": "message/rfc822" },
    });
    expectError(http, 409, "invalid_state");
  });

  it("a disconnected web chat refuses new visitors and the messages of existing sessions", async () => {
    const { org } = await setupOrganization(api);
    const channelId = await webchatChannel(api, org.test);
    const token = await startSession(api, channelId);
    await disconnectChannel(api.context.db, channelId);
    const refused = await visitor(api).post(`/channels/${channelId}/sessions`, {});
    expectError(refused, 409, "invalid_state");
    expect(refused.body.error.message).toMatch(/disconnected/);
    expectError(await visitor(api, token).post("/session/messages", { text: "Hello?" }), 409, "invalid_state");
    await reconnectChannel(api.context.db, channelId);
    expect((await visitor(api, token).post("/session/messages", { text: "Hello?" })).status).toBe(201);
  });
});
