import { execFile } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import path from "node:path";
import { promisify } from "node:util";
import {
  type RecordedVonageRequest,
  sendVonageWebhook,
  signVonageWebhook,
  startVonageSimulator,
  type VonageSimulator,
  vonageErrors,
  vonageInboundSms,
  vonageSmsStatus,
} from "@parley/channels/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { updateChannelSettings } from "../src/channels/lifecycle.js";
import { connectChannel } from "../src/channels/service.js";
import { type Client, eventTypes, onlyEvent, statusOf, waitForStatus, waitUntilSettled } from "./delivery-helpers.js";
import {
  eventually,
  expectValidationError,
  setupOrganization,
  storedEvents,
  type TestOrganization,
  useTestApi,
  useTestWorker,
} from "./harness.js";
import { postFrom } from "./post-from.js";

/**
 * A live SMS channel carried by Vonage's Messages API, against the local Vonage simulator,
 * through the real API and worker on this file's own database: connecting it with the admin
 * CLI, sends by `POST /v1/messages` with the application's JWT, signed status and inbound
 * webhooks on the public routes, STOP, refusals, retries and the per-provider text limit.
 */
const run = promisify(execFile);
const distDir = path.resolve(import.meta.dirname, "../dist");

const vonage = {} as { simulator: VonageSimulator };
beforeAll(async () => {
  vonage.simulator = await startVonageSimulator();
});
afterAll(() => vonage.simulator?.close());

/** Every statement the API sends: the webhook's look-up is judged by its plan. */
const statements: string[] = [];
const api = useTestApi(
  { RATE_LIMIT_PER_MINUTE: "100000" },
  { ownDatabase: true, onQuery: (query) => statements.length < 10_000 && statements.push(query) },
);
/** The same routes with an allowance of 3 requests a minute per source address, on a database of its own. */
const limited = useTestApi({ SMS_WEBHOOK_RATE_LIMIT_PER_MINUTE: "3" }, { ownDatabase: true });
// A send the simulator leaves hanging times out after a second, and is retried.
useTestWorker(api, () => ({ vonage: vonage.simulator.options({ timeoutMs: 1_000 }) }));

interface VonageChannel {
  id: string;
  /** The channel's number as Vonage writes it: digits, no `+`. */
  number: string;
}

interface Setup {
  org: TestOrganization;
  live: Client;
  channel: VonageChannel;
}

/** A UK number of the range kept for fiction (07700 900xxx and its neighbours), as Vonage writes it. */
function ukNumber(): string {
  return `4477009${String(Math.floor(Math.random() * 100_000)).padStart(5, "0")}`;
}

/** A US customer, as Vonage writes the number. */
function usNumber(): string {
  return `1415555${String(Math.floor(Math.random() * 10_000)).padStart(4, "0")}`;
}

function settingsOf(number: string, overrides: Record<string, unknown> = {}) {
  return {
    application_id: vonage.simulator.applicationId,
    private_key: vonage.simulator.privateKey,
    signature_secret: vonage.simulator.signatureSecret,
    from: number,
    ...overrides,
  };
}

/** A live Vonage channel of a new organization, connected in process as `pnpm admin connect-channel` connects it. */
async function vonageChannel(overrides: Record<string, unknown> = {}): Promise<Setup> {
  const { org, live } = await setupOrganization(api);
  const number = ukNumber();
  const channel = await connectChannel(api.context.db, api.context.secretBox, {
    organizationId: org.id,
    environment: "live",
    type: "sms",
    name: "Vonage SMS",
    provider: "vonage",
    settings: settingsOf(number, overrides),
  });
  return { org, live, channel: { id: channel.id, number } };
}

function webhookUrl(route: "inbound" | "status"): string {
  return `${api.baseUrl}/channels/webhooks/vonage/${route}`;
}

/** Posts a webhook signed as Vonage signs it (the simulator's secret and application) and expects 200. */
async function deliver(route: "inbound" | "status", payload: unknown) {
  const response = await vonage.simulator.postWebhook(webhookUrl(route), payload);
  expect(response.status, response.body).toBe(200);
}

/** The `receive_vonage_webhook` jobs waiting or in hand (a completed job is deleted), of one message_uuid or all. */
async function webhookJobs(messageUuid?: string) {
  const rows = await api.client.sql<{ id: string; last_error: string | null; uuid: string | null }[]>`
    select jobs.id::text, jobs.last_error, jobs.payload->'body'->>'message_uuid' as uuid
    from graphile_worker._private_jobs as jobs
    join graphile_worker._private_tasks as tasks on tasks.id = jobs.task_id
    where tasks.identifier = 'receive_vonage_webhook'`;
  return rows
    .filter((row) => messageUuid === undefined || row.uuid === messageUuid)
    .map(({ id, last_error }) => ({ id, last_error }));
}

async function waitForWebhookJobs() {
  const left = await eventually(
    () => webhookJobs(),
    (rows) => rows.length === 0 || rows.some((row) => row.last_error !== null),
  );
  expect(left, "every receive_vonage_webhook job completed").toEqual([]);
}

/** `parley_provider_webhooks_total{provider="vonage",result}` of this file's API. */
async function vonageWebhooksCounted(result: string): Promise<number> {
  const text = (await api.context.metrics?.registry.metrics()) ?? "";
  const line = text
    .split("\n")
    .find((entry) => entry.startsWith(`parley_provider_webhooks_total{provider="vonage",result="${result}"}`));
  return line ? Number(line.split(" ").pop()) : 0;
}

async function messagesByProviderId(providerMessageId: string) {
  return api.client.sql<{ id: string; conversation_id: string; direction: string }[]>`
    select id, conversation_id, direction from messages where provider_message_id = ${providerMessageId}`;
}

/** An inbound SMS from `from` to the channel, delivered signed; returns it as GET /messages/{id} shows it. */
async function customerTexts(setup: Setup, from: string, text: string, messageUuid = randomUUID()) {
  await deliver("inbound", vonageInboundSms({ to: setup.channel.number, from, text, messageUuid }));
  const [row] = await eventually(
    () => messagesByProviderId(messageUuid),
    (rows) => rows.length > 0,
  );
  const response = await setup.live.get(`/messages/${row?.id}`);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body;
}

/** A contact with this phone (as typed) and a conversation with it on the channel. */
async function conversationWith(setup: Setup, phone: string) {
  const contact = await setup.live.post("/contacts", { body: { name: "Ada", phone } });
  expect(contact.status, JSON.stringify(contact.body)).toBe(201);
  const conversation = await setup.live.post("/conversations", {
    body: { contact_id: contact.body.id, channel_id: setup.channel.id },
  });
  expect(conversation.status, JSON.stringify(conversation.body)).toBe(201);
  return { contact: contact.body, conversation: conversation.body };
}

async function postText(client: Client, conversationId: string, text: string) {
  const response = await client.post("/messages", { body: { conversation_id: conversationId, type: "text", text } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  expect(response.body.status).toBe("queued");
  return response.body;
}

/** A recorded send's JSON body, loosely typed for assertions. */
function sendBody(request: RecordedVonageRequest): Record<string, unknown> {
  return (request.body ?? {}) as Record<string, unknown>;
}

/** Whether a request to the simulator sends to this customer (Vonage digits). */
const sendingTo = (customer: string) => (request: RecordedVonageRequest) =>
  request.method === "POST" && request.path === "/v1/messages" && sendBody(request).to === customer;

/** The simulator's `POST /v1/messages` requests to this customer. */
function sendsTo(customer: string) {
  return vonage.simulator.requests.filter(sendingTo(customer));
}

async function providerIdOf(messageId: string): Promise<string | null> {
  const [row] = await api.client.sql<{ provider_message_id: string | null }[]>`
    select provider_message_id from messages where id = ${messageId}`;
  return row?.provider_message_id ?? null;
}

/** A text sent and answered by the simulator: `sent`, with Vonage's message_uuid. */
async function sentText(setup: Setup, text = "Your table is ready") {
  const customer = usNumber();
  const { conversation } = await conversationWith(setup, `+${customer}`);
  const queued = await postText(setup.live, conversation.id, text);
  await waitForStatus(api, setup.live, queued.id, "sent");
  const uuid = await providerIdOf(queued.id);
  expect(uuid).toEqual(expect.any(String));
  return { customer, conversation, message: queued, uuid: uuid as string };
}

function statusWebhook(
  setup: Setup,
  sent: { customer: string; uuid: string; message: { id: string } },
  status: string,
  error?: { code: string; title: string; detail?: string },
) {
  return deliver(
    "status",
    vonageSmsStatus({
      messageUuid: sent.uuid,
      status,
      to: sent.customer,
      from: setup.channel.number,
      clientRef: sent.message.id,
      ...(error ? { error } : {}),
    }),
  );
}

describe("connecting a Vonage number with the admin CLI", () => {
  const admin = async (...args: string[]) => {
    const { DATABASE_URL: _ignored, ...rest } = process.env;
    const { stdout } = await run("node", [path.join(distDir, "admin.js"), ...args, "--json"], {
      env: { ...rest, DATABASE_URL: api.databaseUrl },
    }).catch((error: { stdout: string }) => ({ stdout: error.stdout }));
    const lines = stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    return { text: stdout, json: JSON.parse(lines[0] ?? "") };
  };

  it("takes the private key with escaped newlines, checked or with --no-check; the channel is sms from vonage, and update-channel changes a setting in place", async () => {
    const { org, live } = await setupOrganization(api);
    const escaped = (vonage.simulator.privateKey ?? "").trim().replace(/\n/g, "\\n");
    expect(escaped).not.toContain("\n");
    const connect = (number: string, ...extra: string[]) =>
      admin(
        ...["connect-channel", "--org", org.id, "--env", "live", "--type", "sms", "--setting", "provider=vonage"],
        ...["--setting", `application_id=${vonage.simulator.applicationId}`, "--setting", `private_key=${escaped}`],
        ...["--setting", `signature_secret=${vonage.simulator.signatureSecret}`, "--setting", `from=${number}`],
        ...extra,
      );

    const checkedNumber = ukNumber();
    const checked = await connect(checkedNumber);
    const unchecked = await connect(ukNumber(), "--no-check");
    for (const { text, json } of [checked, unchecked]) {
      expect(json.channel, text).toMatchObject({
        type: "sms",
        provider: "vonage",
        environment: "live",
        status: "active",
      });
      expect(text).not.toContain(vonage.simulator.signatureSecret);
      expect(text).not.toContain("PRIVATE KEY");
    }
    const fetched = await live.get(`/channels/${checked.json.channel.id}`);
    expect(fetched.body).toMatchObject({
      id: checked.json.channel.id,
      type: "sms",
      provider: "vonage",
      sandbox: false,
      capabilities: { message_types: ["text"], delivery_receipts: true, read_receipts: false },
    });

    // A key that is not one is refused, and the refusal never quotes it.
    const refused = await admin(
      ...["connect-channel", "--org", org.id, "--env", "live", "--type", "sms", "--setting", "provider=vonage"],
      ...["--setting", `application_id=${vonage.simulator.applicationId}`, "--setting", "private_key=sekrit-not-a-key"],
      ...["--setting", `signature_secret=${vonage.simulator.signatureSecret}`, "--setting", `from=${ukNumber()}`],
    );
    expect(refused.json.error.code).toBe("invalid_option");
    expect(refused.json.error.message).toMatch(/private_key/);
    expect(refused.text).not.toContain("sekrit-not-a-key");

    // A new signature secret, in place: webhooks signed with it are taken, the old one's refused.
    const newSecret = randomBytes(24).toString("base64url");
    const updated = await admin(
      ...["update-channel", "--channel", checked.json.channel.id, "--setting", `signature_secret=${newSecret}`],
    );
    expect(updated.json.channel, updated.text).toMatchObject({ id: checked.json.channel.id, status: "active" });
    const inbound = JSON.stringify(vonageInboundSms({ to: checkedNumber, from: usNumber(), text: "Hello" }));
    const old = await sendVonageWebhook(webhookUrl("inbound"), inbound, vonage.simulator.signWebhook(inbound));
    expect(old.status).toBe(403);
    const fresh = await sendVonageWebhook(
      webhookUrl("inbound"),
      inbound,
      `Bearer ${signVonageWebhook(inbound, newSecret, { application_id: vonage.simulator.applicationId })}`,
    );
    expect(fresh.status).toBe(200);
    await waitForWebhookJobs();
    const received = (await storedEvents(api, org.id, "live")).filter((event) => event.type === "message.received");
    expect(received.map((event) => event.data.message.text)).toEqual(["Hello"]);
  }, 120_000);
});

describe("a Vonage number's settings", () => {
  it("refuses mms=true: Parley sends text only through Vonage, so the channel never promises images", async () => {
    const { org } = await setupOrganization(api);
    const connect = (mms: string) =>
      connectChannel(api.context.db, api.context.secretBox, {
        organizationId: org.id,
        environment: "live",
        type: "sms",
        name: "Vonage SMS",
        provider: "vonage",
        settings: settingsOf(ukNumber(), { mms }),
      });

    await expect(connect("true")).rejects.toThrow(/mms: must be false/);
    const textOnly = await connect("false");
    expect(textOnly.capabilities.message_types).toEqual(["text"]);
    await expect(
      updateChannelSettings(api.context.db, api.context.secretBox, {
        channelId: textOnly.id,
        settings: { mms: "true" },
      }),
    ).rejects.toThrow(/mms: must be false/);
  });
});

describe("sending through Vonage", () => {
  it("posts /v1/messages with the application's JWT, Vonage's SMS shape, numbers without + and the message id as client_ref", async () => {
    const setup = await vonageChannel();
    const sent = await sentText(setup, "Your table is ready");

    const [request, ...others] = sendsTo(sent.customer);
    expect(others).toEqual([]);
    // The simulator verified the RS256 signature with the application's public key.
    expect(request?.claims).toMatchObject({ application_id: vonage.simulator.applicationId });
    expect(request?.headers.authorization).toMatch(/^Bearer /);
    expect(request?.body).toEqual({
      channel: "sms",
      message_type: "text",
      to: sent.customer,
      from: setup.channel.number,
      text: "Your table is ready",
      client_ref: sent.message.id,
    });
    expect(await eventTypes(api, sent.message.id)).toEqual(["message.sent"]);
  });

  it("refuses 1,001 characters with 422 before storing anything (Vonage's limit is 1,000)", async () => {
    const setup = await vonageChannel();
    const { conversation } = await conversationWith(setup, `+${usNumber()}`);

    const tooLong = await setup.live.post("/messages", {
      body: { conversation_id: conversation.id, type: "text", text: "a".repeat(1001) },
    });
    expectValidationError(tooLong, "text");
    const [count] = await api.client.sql<{ count: number }[]>`
      select count(*)::int as count from messages where conversation_id = ${conversation.id}`;
    expect(count?.count).toBe(0);
    const fits = await postText(setup.live, conversation.id, "a".repeat(1000));
    await waitForStatus(api, setup.live, fits.id, "sent");
  });

  it("retries 429 and 5xx with backoff, the message staying queued, then sends it", async () => {
    const setup = await vonageChannel();
    const customer = usNumber();
    const { conversation } = await conversationWith(setup, `+${customer}`);
    vonage.simulator.failNext(1, vonageErrors.throttled(), sendingTo(customer));
    vonage.simulator.failNext(1, vonageErrors.internal(), sendingTo(customer));

    const queued = await postText(setup.live, conversation.id, "Once the line is free");
    await eventually(
      async () => sendsTo(customer).length,
      (count) => count >= 1,
    );
    expect(await statusOf(api, queued.id)).toBe("queued");
    await waitForStatus(api, setup.live, queued.id, "sent", 25_000);
    expect(sendsTo(customer).map((request) => sendBody(request).client_ref)).toEqual([queued.id, queued.id, queued.id]);
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent"]);
  }, 30_000);

  it("marks the channel needs_attention on a 401 and fails the message with unauthorized; new settings make it active", async () => {
    const setup = await vonageChannel();
    const customer = usNumber();
    const { conversation } = await conversationWith(setup, `+${customer}`);
    vonage.simulator.failNext(1, vonageErrors.unauthorized(), sendingTo(customer));

    const refused = await postText(setup.live, conversation.id, "Are you there?");
    const failed = await waitForStatus(api, setup.live, refused.id, "failed");
    expect(failed.error.code).toBe("unauthorized");
    expect(await eventTypes(api, refused.id)).toEqual(["message.failed"]);
    const channel = (await setup.live.get(`/channels/${setup.channel.id}`)).body;
    expect(channel.status).toBe("needs_attention");
    expect(channel.status_reason).toMatch(/Vonage/);
    expect(channel.status_reason).not.toContain("PRIVATE KEY");

    const updated = await updateChannelSettings(api.context.db, api.context.secretBox, {
      channelId: setup.channel.id,
      settings: { private_key: vonage.simulator.privateKey },
    });
    expect(updated).toMatchObject({ status: "active", status_reason: null });
    const next = await postText(setup.live, conversation.id, "Back again");
    await waitForStatus(api, setup.live, next.id, "sent");
  });
});

describe("Vonage's status webhooks", () => {
  it("moves a sent message to delivered; a late submitted changes nothing", async () => {
    const setup = await vonageChannel();
    const sent = await sentText(setup);

    await statusWebhook(setup, sent, "delivered");
    await waitForStatus(api, setup.live, sent.message.id, "delivered");
    await statusWebhook(setup, sent, "submitted");
    await statusWebhook(setup, sent, "rejected", { code: "1120", title: "Illegal Sender Address - rejected" });
    await waitForWebhookJobs();

    expect(await statusOf(api, sent.message.id)).toBe("delivered");
    expect(await eventTypes(api, sent.message.id)).toEqual(["message.sent", "message.delivered"]);
  });

  it("fails a rejected message with Vonage's code untranslated, and an undeliverable one with its word", async () => {
    const setup = await vonageChannel();
    const rejected = await sentText(setup, "First");
    const undeliverable = await sentText(setup, "Second");

    await statusWebhook(setup, rejected, "rejected", {
      code: "1120",
      title: "Illegal Sender Address - rejected",
      detail: "Due to local regulations, the SenderID you set in from in the request was not accepted.",
    });
    await statusWebhook(setup, undeliverable, "undeliverable");

    const failed = await waitForStatus(api, setup.live, rejected.message.id, "failed");
    expect(failed.error).toEqual({
      code: "1120",
      message:
        "Illegal Sender Address - rejected: Due to local regulations, the SenderID you set in from in the request was not accepted.",
    });
    const event = await onlyEvent(api, rejected.message.id, "message.failed");
    expect(event.data.message.error.code).toBe("1120");
    const lost = await waitForStatus(api, setup.live, undeliverable.message.id, "failed");
    expect(lost.error.code).toBe("undeliverable");
  });

  it("takes a submitted status that beats the send's answer, by client_ref, and sends the message once", async () => {
    const setup = await vonageChannel();
    const customer = usNumber();
    const { conversation } = await conversationWith(setup, `+${customer}`);
    // The send's answer never comes: the request times out and the job is retried later.
    vonage.simulator.failNext(1, { hang: true }, sendingTo(customer));
    const queued = await postText(setup.live, conversation.id, "Hello");
    await eventually(
      async () => sendsTo(customer).length,
      (count) => count === 1,
    );
    expect(await statusOf(api, queued.id)).toBe("queued");

    const uuid = randomUUID();
    await deliver(
      "status",
      vonageSmsStatus({
        messageUuid: uuid,
        status: "submitted",
        to: customer,
        from: setup.channel.number,
        clientRef: queued.id,
      }),
    );
    await waitForStatus(api, setup.live, queued.id, "sent");
    expect(await providerIdOf(queued.id)).toBe(uuid);
    // The delivery receipt names the message by Vonage's id alone.
    await deliver(
      "status",
      vonageSmsStatus({ messageUuid: uuid, status: "delivered", to: customer, from: setup.channel.number }),
    );
    await waitForStatus(api, setup.live, queued.id, "delivered");
    // The timed-out send's retry finds the message sent, and sends nothing.
    await waitUntilSettled(api, queued.id, 20_000);
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent", "message.delivered"]);
    expect(sendsTo(customer)).toHaveLength(1);
  });
});

describe("Vonage's inbound webhooks", () => {
  it("stores a signed inbound SMS once, on the contact found by its normalised number", async () => {
    const setup = await vonageChannel();
    const customer = usNumber();
    // The contact's phone as someone typed it, in the channel's default region (US).
    const typed = `(${customer.slice(1, 4)}) ${customer.slice(4, 7)}-${customer.slice(7)}`;
    const { contact, conversation } = await conversationWith(setup, typed);
    const uuid = randomUUID();

    const message = await customerTexts(setup, customer, "Is my table ready?", uuid);
    // Vonage retries: the same message_uuid again changes nothing.
    await deliver(
      "inbound",
      vonageInboundSms({ to: setup.channel.number, from: customer, text: "Is my table ready?", messageUuid: uuid }),
    );
    await waitForWebhookJobs();

    expect(message).toMatchObject({
      direction: "inbound",
      type: "text",
      text: "Is my table ready?",
      conversation_id: conversation.id,
    });
    expect(await messagesByProviderId(uuid)).toHaveLength(1);
    const received = (await storedEvents(api, setup.org.id, "live")).filter(
      (event) => event.type === "message.received",
    );
    expect(received).toHaveLength(1);
    expect((await setup.live.get(`/contacts/${contact.id}`)).body.phone).toBe(typed);
  });

  it("opts the contact out on STOP, and the next send fails with Vonage's code without calling Vonage", async () => {
    const setup = await vonageChannel();
    const customer = usNumber();
    const inbound = await customerTexts(setup, customer, "STOP");
    const conversation = (await setup.live.get(`/conversations/${inbound.conversation_id}`)).body;
    const optOuts = (await setup.live.get(`/contacts/${conversation.contact_id}/opt-outs`)).body.data;
    expect(optOuts).toMatchObject([{ channel_id: setup.channel.id, keyword: "STOP" }]);

    const queued = await postText(setup.live, inbound.conversation_id, "We miss you");
    const failed = await waitForStatus(api, setup.live, queued.id, "failed");
    expect(failed.error.code).toBe("9");
    expect(await eventTypes(api, queued.id)).toEqual(["message.failed"]);
    expect(sendsTo(customer)).toEqual([]);
  });

  it("answers 200 and ignores a webhook for a number no channel has", async () => {
    const unknown = ukNumber();
    const uuid = randomUUID();
    const response = await vonage.simulator.postWebhook(
      webhookUrl("inbound"),
      vonageInboundSms({ to: unknown, from: usNumber(), text: "Anyone?", messageUuid: uuid }),
    );
    expect(response.status).toBe(200);
    expect(await vonageWebhooksCounted("unknown_channel")).toBeGreaterThanOrEqual(1);
    expect(await webhookJobs(uuid)).toEqual([]);
    expect(await messagesByProviderId(uuid)).toEqual([]);
  });
});

describe("refused Vonage webhooks store nothing", () => {
  it("refuses unsigned, wrongly signed, tampered and other applications' webhooks", async () => {
    const setup = await vonageChannel();
    const badSignaturesBefore = await vonageWebhooksCounted("bad_signature");
    const refusedIds: string[] = [];
    const inbound = () => {
      const uuid = randomUUID();
      refusedIds.push(uuid);
      return JSON.stringify(
        vonageInboundSms({ to: setup.channel.number, from: usNumber(), text: "Forged", messageUuid: uuid }),
      );
    };

    // No Authorization: 503, so Vonage's rare unsigned callback comes again, signed.
    const unsigned = await sendVonageWebhook(webhookUrl("inbound"), inbound(), null);
    expect(unsigned.status).toBe(503);
    const body = inbound();
    const cases: [string, string][] = [
      [
        "another secret",
        `Bearer ${signVonageWebhook(body, "not-the-secret", { application_id: vonage.simulator.applicationId })}`,
      ],
      ["no signature (alg none)", `Bearer ${unsignedToken(body)}`],
      ["not a bearer token", "Basic dXNlcjpwYXNz"],
      ["another application", vonage.simulator.signWebhook(body, { application_id: randomUUID() })],
      ["an old token", vonage.simulator.signWebhook(body, { iat: Math.floor(Date.now() / 1000) - 3600 })],
    ];
    for (const [what, authorization] of cases) {
      const response = await sendVonageWebhook(webhookUrl("inbound"), body, authorization);
      expect(response.status, what).toBe(403);
    }
    // Signed for one body, sent with another: the payload_hash differs.
    const signedBody = inbound();
    const tampered = signedBody.replace("Forged", "Tamper");
    const response = await sendVonageWebhook(webhookUrl("inbound"), tampered, vonage.simulator.signWebhook(signedBody));
    expect(response.status).toBe(403);

    // A genuine webhook after them is stored; none of theirs is.
    await customerTexts(setup, usNumber(), "Genuine");
    await waitForWebhookJobs();
    for (const uuid of refusedIds) expect(await messagesByProviderId(uuid)).toEqual([]);
    expect(await vonageWebhooksCounted("bad_signature")).toBe(badSignaturesBefore + cases.length + 1);
    const received = (await storedEvents(api, setup.org.id, "live")).filter(
      (event) => event.type === "message.received",
    );
    expect(received.map((event) => event.data.message.text)).toEqual(["Genuine"]);
  });

  it("answers 400 to a body that is not JSON and 413 to one over 64 KiB", async () => {
    const setup = await vonageChannel();
    const notJson = "{not json";
    const bad = await sendVonageWebhook(webhookUrl("status"), notJson, vonage.simulator.signWebhook(notJson));
    expect(bad.status).toBe(400);
    const large = JSON.stringify({
      ...vonageInboundSms({ to: setup.channel.number, from: usNumber(), text: "x" }),
      padding: "x".repeat(65 * 1024),
    });
    const tooLarge = await sendVonageWebhook(webhookUrl("inbound"), large, vonage.simulator.signWebhook(large));
    expect(tooLarge.status).toBe(413);
  });
});

/** A token that claims to be Vonage's, with `alg: none` and no signature. */
function unsignedToken(body: string): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const claims = signVonageWebhook(body, "x").split(".")[1];
  return `${encode({ alg: "none", typ: "JWT" })}.${claims}.`;
}

describe("the Vonage webhooks' allowance per source address", () => {
  it("answers 429 rate_limited past the allowance of one source address, not of another", async () => {
    const url = `${limited.baseUrl}/channels/webhooks/vonage/inbound`;
    // A number no channel has: 200 within the allowance (the look-up comes before the signature).
    const post = (address: string) =>
      postFrom(
        url,
        address,
        { "content-type": "application/json", authorization: "Bearer not.a.token" },
        JSON.stringify({ channel: "sms", message_type: "text", to: ukNumber(), from: usNumber(), text: "Hi" }),
      );
    const burst = async (address: string) => {
      const answers = [];
      for (let index = 0; index < 4; index++) answers.push(await post(address));
      return answers;
    };
    let answers = await burst("127.0.0.2");
    // A burst straddling a minute boundary counts in two windows: one more, in the next.
    if (answers[0]?.reset !== answers[3]?.reset) answers = await burst("127.0.0.2");

    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 429]);
    expect(JSON.parse(answers[3]?.body ?? "{}").error.code).toBe("rate_limited");
    expect((await post("127.0.0.3")).status).toBe(200);
  });
});

describe("the Vonage webhooks' cost before authentication", () => {
  it("find the number's channel through the provider_account index among 1,000 channels", async () => {
    const setup = await vonageChannel();
    // 999 more Vonage channels, inserted at once (their settings need no secrets here).
    await api.client.sql`
      insert into channels (id, organization_id, environment, type, name, provider, settings)
      select 'chn_' || lpad(i::text, 26, '0'), ${setup.org.id}, 'live', 'sms', 'SMS ' || i, 'vonage',
             jsonb_build_object('application_id', ${vonage.simulator.applicationId}::text, 'from', '1628' || lpad(i::text, 7, '0'))
      from generate_series(1, 999) as i`;
    await api.client.sql`analyze channels`;
    statements.length = 0;

    const forged = JSON.stringify(vonageInboundSms({ to: setup.channel.number, from: usNumber(), text: "Forged" }));
    const answer = await sendVonageWebhook(
      webhookUrl("inbound"),
      forged,
      `Bearer ${signVonageWebhook(forged, "not-the-secret")}`,
    );
    expect(answer.status).toBe(403);

    const lookup = statements.find((statement) => statement.includes('"provider_account" ='));
    expect(lookup, statements.join("\n")).toBeDefined();
    const plan = await api.client.sql.unsafe(`explain (generic_plan) ${lookup}`);
    const text = plan.map((row) => Object.values(row).join("")).join("\n");
    expect(text).toContain("channels_provider_account_key");
    expect(text).not.toMatch(/Seq Scan on channels/);
  });
});
