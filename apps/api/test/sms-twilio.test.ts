import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { twilioErrors, twilioSid } from "@parley/channels/testing";
import { describe, expect, it } from "vitest";
import { type Client, eventTypes, statusOf, waitForStatus } from "./delivery-helpers.js";
import { download, makeImage, upload } from "./files.js";
import {
  eventually,
  expectError,
  setupOrganization,
  type TestOrganization,
  useTestApi,
  useTestWorker,
} from "./harness.js";
import { conversationMessages, postMessage, providerIdOf, waitForInbound } from "./meta-helpers.js";
import { type PostAnswer, postFrom } from "./post-from.js";
import {
  connectTwilioChannel,
  deliverTwilio,
  sendRequestsFrom,
  smsConversation,
  type TwilioChannel,
  twilioWebhookUrl,
  useTwilioSimulator,
  usNumber,
} from "./twilio-helpers.js";

/**
 * A live SMS channel through Twilio (issue 40, items 4, 6, 7 and 9) against the Twilio
 * simulator, through the real API, admin command and worker on this file's own database:
 * connecting with the credentials checked, sends (form fields, Basic auth, MMS by signed
 * link), signed status callbacks on the message state machine, inbound texts and media, STOP,
 * refusals and retries, and the webhook's defences.
 */
const twilio = useTwilioSimulator();
const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "100000" }, { ownDatabase: true });
useTestWorker(api, () => ({ twilio: twilio.simulator.options() }));
/** The same route with an allowance of 3 requests a minute per source address, on a database of its own. */
const limited = useTestApi({ SMS_WEBHOOK_RATE_LIMIT_PER_MINUTE: "3" }, { ownDatabase: true });

const run = promisify(execFile);
const adminScript = path.resolve(import.meta.dirname, "../dist/admin.js");

interface Live {
  org: TestOrganization;
  live: Client;
  channel: TwilioChannel;
}

async function twilioChannel(settings: Record<string, unknown> = {}): Promise<Live> {
  const { org, live } = await setupOrganization(api);
  const channel = await connectTwilioChannel(api, twilio.simulator, org.id, settings);
  return { org, live, channel };
}

/** `pnpm --silent admin ... --json` (dist/admin.js) on this file's database, Twilio at the simulator. */
async function admin(...args: string[]): Promise<{ code: number; output: Record<string, any> }> {
  const env = {
    ...process.env,
    DATABASE_URL: api.databaseUrl,
    TWILIO_API_BASE_URL: twilio.simulator.url,
    LOG_LEVEL: "silent",
  };
  const result = await run("node", [adminScript, ...args, "--json"], { env }).then(
    ({ stdout }) => ({ code: 0, stdout }),
    (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
  );
  const lines = result.stdout.trim().split("\n");
  expect(lines, result.stdout).toHaveLength(1);
  return { code: result.code, output: JSON.parse(lines[0] ?? "{}") };
}

async function channelRows(organizationId: string) {
  return api.client.sql<{ id: string; provider: string; provider_account: string | null; settings: any }[]>`
    select id, provider, provider_account, settings from channels
    where organization_id = ${organizationId} and environment = 'live' and type = 'sms'`;
}

async function messageCount(organizationId: string): Promise<number> {
  const [row] = await api.client.sql<{ count: number }[]>`
    select count(*)::int as count from messages where organization_id = ${organizationId}`;
  return row?.count ?? 0;
}

async function twilioJobs(): Promise<number> {
  const [row] = await api.client.sql<{ count: number }[]>`
    select count(*)::int as count from graphile_worker._private_jobs as jobs
    join graphile_worker._private_tasks as tasks on tasks.id = jobs.task_id
    where tasks.identifier = 'receive_twilio_webhook'`;
  return row?.count ?? 0;
}

/** A status callback for a message Parley sent on the channel, signed and posted as Twilio does. */
async function statusCallback(
  setup: Live,
  messageId: string,
  status: "sent" | "delivered" | "undelivered" | "failed",
  errorCode?: number,
) {
  const callback = twilio.simulator.statusCallback(twilioWebhookUrl(api), {
    messageSid: await providerIdOf(api, messageId),
    status,
    to: "+14155550000",
    from: setup.channel.account,
    ...(errorCode === undefined ? {} : { errorCode }),
  });
  await deliverTwilio(twilio.simulator, callback);
}

/** A text from `from` to the channel's number, signed and posted as Twilio does; resolves with the stored message. */
async function textFrom(setup: Live, from: string, body: string, extra: Record<string, unknown> = {}) {
  const callback = twilio.simulator.inboundMessage(twilioWebhookUrl(api), {
    from,
    to: setup.channel.account,
    body,
    ...extra,
  });
  await deliverTwilio(twilio.simulator, callback);
  return waitForInbound(api, setup.live, callback.params.MessageSid ?? "");
}

describe("connecting a Twilio channel with pnpm admin connect-channel", () => {
  it("asks Twilio with the account's credentials first, then stores the channel: type sms, provider twilio", async () => {
    const { org, live } = await setupOrganization(api);
    const from = usNumber();
    twilio.simulator.reset();

    const { code, output } = await admin(
      "connect-channel",
      ...["--org", org.id, "--env", "live", "--type", "sms"],
      ...["--setting", "provider=twilio", "--setting", `account_sid=${twilio.simulator.accountSid}`],
      ...[
        "--setting",
        `auth_token=${twilio.simulator.authToken}`,
        "--setting",
        `from=${from}`,
        "--setting",
        "mms=true",
      ],
    );

    expect(code).toBe(0);
    expect(output.channel).toMatchObject({ type: "sms", provider: "twilio", environment: "live", status: "active" });
    const checked = twilio.simulator.requests.map((request) => [request.method, request.path]);
    expect(checked).toEqual([["GET", `/2010-04-01/Accounts/${twilio.simulator.accountSid}.json`]]);
    const fetched = await live.get(`/channels/${output.channel.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body).toMatchObject({
      type: "sms",
      provider: "twilio",
      sandbox: false,
      capabilities: { message_types: ["text", "image"], delivery_receipts: true, read_receipts: false },
    });
    // The number finds the channel; the Auth Token is sealed, never in the plain settings.
    const [row] = await channelRows(org.id);
    expect(row).toMatchObject({ provider: "twilio", provider_account: from });
    expect(row?.settings).toMatchObject({
      account_sid: twilio.simulator.accountSid,
      from,
      mms: true,
      default_region: "US",
    });
    expect(JSON.stringify(row?.settings)).not.toContain(twilio.simulator.authToken);
  });

  it("refuses a wrong Auth Token with Twilio's answer and stores nothing; --no-check stores it unchecked", async () => {
    const { org } = await setupOrganization(api);
    const settings = [
      ...["--setting", "provider=twilio", "--setting", `account_sid=${twilio.simulator.accountSid}`],
      ...["--setting", "auth_token=not-the-token", "--setting", `from=${usNumber()}`],
    ];

    const refused = await admin("connect-channel", "--org", org.id, "--env", "live", "--type", "sms", ...settings);

    expect(refused.code).toBe(1);
    expect(refused.output.error.code).toBe("credentials_rejected");
    expect(refused.output.error.message).toContain("Authenticate (code 20003)");
    expect(refused.output.error.message).not.toContain("not-the-token");
    expect(await channelRows(org.id)).toEqual([]);

    const unchecked = await admin(
      ...["connect-channel", "--org", org.id, "--env", "live", "--type", "sms", ...settings, "--no-check"],
    );
    expect(unchecked.code).toBe(0);
    expect(await channelRows(org.id)).toHaveLength(1);
  });

  it("needs the provider named, and says which there are", async () => {
    const { org } = await setupOrganization(api);

    const refused = await admin(
      ...["connect-channel", "--org", org.id, "--env", "live", "--type", "sms"],
      ...["--setting", `account_sid=${twilio.simulator.accountSid}`, "--setting", "auth_token=x", "--no-check"],
    );

    expect(refused.code).toBe(1);
    expect(refused.output.error).toMatchObject({ code: "invalid_option" });
    expect(refused.output.error.message).toContain("provider=twilio or provider=vonage");
    expect(await channelRows(org.id)).toEqual([]);
  });
});

describe("sending through Twilio", () => {
  it("posts the form Twilio documents with Basic credentials and the status callback, and keeps the sid", async () => {
    const setup = await twilioChannel();
    const { conversation, phone } = await smsConversation(setup.live, setup.channel.id, "(415) 555-0142");

    const message = await postMessage(setup.live, {
      conversation_id: conversation.id,
      type: "text",
      text: "Your order shipped",
    });
    await waitForStatus(api, setup.live, message.id, "sent");

    const [sent] = sendRequestsFrom(twilio.simulator, setup.channel.account);
    expect(phone).toBe("(415) 555-0142");
    expect(sent?.path).toBe(`/2010-04-01/Accounts/${twilio.simulator.accountSid}/Messages.json`);
    expect(sent?.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(sent?.form).toEqual({
      To: "+14155550142",
      From: setup.channel.account,
      Body: "Your order shipped",
      StatusCallback: `${api.baseUrl}/channels/webhooks/twilio`,
    });
    const basic = Buffer.from(`${twilio.simulator.accountSid}:${twilio.simulator.authToken}`).toString("base64");
    expect(sent?.headers.authorization).toBe(`Basic ${basic}`);
    expect(await providerIdOf(api, message.id)).toMatch(/^SM[0-9a-f]{32}$/);
  });

  it("sends through a Messaging Service by its SID instead of From", async () => {
    const service = twilioSid("MG");
    const setup = await twilioChannel({ messaging_service_sid: service });
    const { conversation } = await smsConversation(setup.live, setup.channel.id);

    const message = await postMessage(setup.live, { conversation_id: conversation.id, type: "text", text: "Hi" });
    await waitForStatus(api, setup.live, message.id, "sent");

    const [sent] = sendRequestsFrom(twilio.simulator, service);
    expect(sent?.form.MessagingServiceSid).toBe(service);
    expect(sent?.form.From).toBeUndefined();
  });

  it("sends an image as MMS: MediaUrl is Parley's signed link, which serves the file without a key", async () => {
    const setup = await twilioChannel({ mms: "true" });
    const { conversation } = await smsConversation(setup.live, setup.channel.id);
    const png = await makeImage("png", { width: 16, height: 16 });
    const uploaded = await upload(api, setup.org.live, { bytes: png, type: "image/png", filename: "map.png" });
    expect(uploaded.status).toBe(201);

    const message = await postMessage(setup.live, {
      conversation_id: conversation.id,
      type: "image",
      attachment_id: uploaded.body.id,
      text: "Here is the map",
    });
    await waitForStatus(api, setup.live, message.id, "sent");

    const [sent] = sendRequestsFrom(twilio.simulator, setup.channel.account);
    expect(sent?.form.Body).toBe("Here is the map");
    const mediaUrl = String(sent?.form.MediaUrl);
    expect(mediaUrl.startsWith(`${api.baseUrl.replace(/\/v1$/, "")}/files/`)).toBe(true);
    const fetched = await fetch(mediaUrl);
    expect(fetched.status).toBe(200);
    const stored = await download(setup.org.live, uploaded.body.url);
    expect(Buffer.from(await fetched.arrayBuffer()).equals(stored.bytes)).toBe(true);
    expect(await providerIdOf(api, message.id)).toMatch(/^MM/);
  });
});

describe("Twilio's status callbacks", () => {
  async function sentMessage(setup: Live) {
    const { conversation } = await smsConversation(setup.live, setup.channel.id);
    const message = await postMessage(setup.live, { conversation_id: conversation.id, type: "text", text: "Status?" });
    await waitForStatus(api, setup.live, message.id, "sent");
    return message;
  }

  it("move the message sent then delivered, each with its event once", async () => {
    const setup = await twilioChannel();
    const message = await sentMessage(setup);

    await statusCallback(setup, message.id, "sent");
    await statusCallback(setup, message.id, "delivered");

    await waitForStatus(api, setup.live, message.id, "delivered");
    expect(await eventTypes(api, message.id)).toEqual(["message.sent", "message.delivered"]);
  });

  it("are safe out of order: a sent after delivered changes nothing", async () => {
    const setup = await twilioChannel();
    const message = await sentMessage(setup);

    await statusCallback(setup, message.id, "delivered");
    await waitForStatus(api, setup.live, message.id, "delivered");
    await statusCallback(setup, message.id, "sent");
    await eventually(twilioJobs, (count) => count === 0);

    expect(await statusOf(api, message.id)).toBe("delivered");
    expect(await eventTypes(api, message.id)).toEqual(["message.sent", "message.delivered"]);
  });

  it("fail the message on undelivered with Twilio's ErrorCode untranslated", async () => {
    const setup = await twilioChannel();
    const message = await sentMessage(setup);

    await statusCallback(setup, message.id, "undelivered", 30003);

    const failed = await waitForStatus(api, setup.live, message.id, "failed");
    expect(failed.error).toMatchObject({ code: "30003", message: expect.stringContaining("30003") });
    expect(await eventTypes(api, message.id)).toEqual(["message.sent", "message.failed"]);
  });
});

describe("incoming messages from Twilio", () => {
  it("store an MMS's two files as attachments, the contact found by its number however it was typed", async () => {
    const setup = await twilioChannel();
    const { contact, conversation } = await smsConversation(setup.live, setup.channel.id, "(415) 555-0199");
    const png = await makeImage("png", { width: 8, height: 8 });
    const jpeg = await makeImage("jpeg", { width: 8, height: 8 });
    const first = twilio.simulator.addMedia(png, "image/png");
    const second = twilio.simulator.addMedia(jpeg, "image/jpeg");

    const received = await textFrom(setup, "+14155550199", "Two photos of the damage", {
      media: [
        { url: first.url, contentType: "image/png" },
        { url: second.url, contentType: "image/jpeg" },
      ],
    });

    expect(received).toMatchObject({ direction: "inbound", type: "image", text: "Two photos of the damage" });
    // The business's conversation with the contact typed as (415) 555-0199: the contact was found.
    expect(received.conversation_id).toBe(conversation.id);
    const inbound = await eventually(
      async () => (await conversationMessages(setup.live, conversation.id)).filter((m) => m.direction === "inbound"),
      (messages) => messages.length === 2,
    );
    expect(inbound[1]).toMatchObject({ type: "image", text: null });
    const files = await Promise.all(inbound.map((m) => download(setup.org.live, m.attachment.url)));
    expect(files.map((file) => file.bytes.equals(png) || file.bytes.equals(jpeg))).toEqual([true, true]);
    expect(inbound.map((m) => m.attachment.content_type)).toEqual(["image/png", "image/jpeg"]);
    // The media URLs needed the account's credentials; the CDN never saw them.
    expect(twilio.simulator.cdnRequests.every((request) => request.headers.authorization === undefined)).toBe(true);
    const contacts = await setup.live.get("/contacts", { query: { limit: 100 } });
    expect(contacts.body.data.map((each: { id: string }) => each.id)).toEqual([contact.id]);
  });

  it("take STOP as an opt-out: the next send fails with 21610 and Twilio is not asked", async () => {
    const setup = await twilioChannel();
    const { contact, conversation } = await smsConversation(setup.live, setup.channel.id);

    await textFrom(setup, contact.phone, "STOP");

    const optOuts = await setup.live.get(`/contacts/${contact.id}/opt-outs`);
    expect(optOuts.body.data).toEqual([expect.objectContaining({ channel_id: setup.channel.id, keyword: "STOP" })]);
    const before = sendRequestsFrom(twilio.simulator, setup.channel.account).length;
    const message = await postMessage(setup.live, { conversation_id: conversation.id, type: "text", text: "Sale!" });
    const failed = await waitForStatus(api, setup.live, message.id, "failed");
    expect(failed.error.code).toBe("21610");
    expect(sendRequestsFrom(twilio.simulator, setup.channel.account)).toHaveLength(before);
  });

  it("honour Twilio's OptOutType, whatever the text's language", async () => {
    const setup = await twilioChannel();
    const { contact } = await smsConversation(setup.live, setup.channel.id);

    await textFrom(setup, contact.phone, "ARRÊT", { optOutType: "STOP" });

    const optOuts = await setup.live.get(`/contacts/${contact.id}/opt-outs`);
    expect(optOuts.body.data).toEqual([expect.objectContaining({ channel_id: setup.channel.id })]);
  });

  it("to a Messaging Service's number find the channel of that service", async () => {
    const service = twilioSid("MG");
    const setup = await twilioChannel({ messaging_service_sid: service });
    const callback = twilio.simulator.inboundMessage(twilioWebhookUrl(api), {
      from: usNumber(),
      to: usNumber(),
      body: "Hello",
      messagingServiceSid: service,
    });

    await deliverTwilio(twilio.simulator, callback);

    const received = await waitForInbound(api, setup.live, callback.params.MessageSid ?? "");
    expect(received).toMatchObject({ text: "Hello" });
    const conversation = await setup.live.get(`/conversations/${received.conversation_id}`);
    expect(conversation.body.channel_id).toBe(setup.channel.id);
  });
});

describe("the Twilio webhook's defences", () => {
  it("answers a wrong signature with 403 and stores nothing", async () => {
    const setup = await twilioChannel();
    const before = await messageCount(setup.org.id);
    const callback = twilio.simulator.inboundMessage(twilioWebhookUrl(api), {
      from: usNumber(),
      to: setup.channel.account,
      body: "Forged",
    });

    const answer = await twilio.simulator.send(callback, { signature: "bm90IHRoZSBzaWduYXR1cmU=" });
    // Signed for another URL (another host's): not this one.
    const elsewhere = twilio.simulator.inboundMessage("https://evil.example/v1/channels/webhooks/twilio", {
      from: usNumber(),
      to: setup.channel.account,
      body: "Forged",
    });
    const moved = await twilio.simulator.send({ ...elsewhere, url: callback.url });

    for (const refused of [answer, moved]) {
      expect(refused.status).toBe(403);
      expect(JSON.parse(refused.body).error.code).toBe("invalid_provider_signature");
    }
    expect(await twilioJobs()).toBe(0);
    expect(await messageCount(setup.org.id)).toBe(before);
  });

  it("answers a missing signature with 403", async () => {
    const setup = await twilioChannel();
    const callback = twilio.simulator.inboundMessage(twilioWebhookUrl(api), {
      from: usNumber(),
      to: setup.channel.account,
      body: "Unsigned",
    });

    const answer = await twilio.simulator.send(callback, { signature: null });

    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.body).error.code).toBe("invalid_provider_signature");
    expect(await twilioJobs()).toBe(0);
  });

  it("answers a number no channel has with 200 and an empty TwiML, and ignores it", async () => {
    const callback = twilio.simulator.inboundMessage(twilioWebhookUrl(api), {
      from: usNumber(),
      to: usNumber(),
      body: "Anyone?",
    });

    await deliverTwilio(twilio.simulator, callback);

    expect(await twilioJobs()).toBe(0);
    const [row] = await api.client.sql<{ count: number }[]>`
      select count(*)::int as count from messages where provider_message_id = ${callback.params.MessageSid ?? ""}`;
    expect(row?.count).toBe(0);
  });

  it("answers 429 rate_limited past the allowance of one source address, not of another", async () => {
    const url = `${limited.baseUrl}/channels/webhooks/twilio`;
    const burst = async (address: string) => {
      const answers = [];
      for (let index = 0; index < 4; index++) answers.push(await postTwilioFrom(url, address));
      return answers;
    };
    let answers = await burst("127.0.0.2");
    // A burst straddling a minute boundary counts in two windows: one more, in the next.
    if (answers[0]?.reset !== answers[3]?.reset) answers = await burst("127.0.0.2");

    // Within the allowance: a number no channel has, 200.
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 429]);
    expect(JSON.parse(answers[3]?.body ?? "{}").error.code).toBe("rate_limited");
    expect((await postTwilioFrom(url, "127.0.0.3")).status).toBe(200);
  });
});

describe("Twilio's faults", () => {
  it("retries a 429 with backoff, the message queued meanwhile, then sends it", async () => {
    const setup = await twilioChannel();
    const { conversation } = await smsConversation(setup.live, setup.channel.id);
    twilio.simulator.failNext(
      1,
      twilioErrors.tooManyRequests(),
      (request) => request.form.From === setup.channel.account,
    );

    const message = await postMessage(setup.live, { conversation_id: conversation.id, type: "text", text: "Retry me" });

    await eventually(
      async () => sendRequestsFrom(twilio.simulator, setup.channel.account).length,
      (count) => count === 1,
    );
    expect(await statusOf(api, message.id)).toBe("queued");
    await waitForStatus(api, setup.live, message.id, "sent", 20_000);
    expect(sendRequestsFrom(twilio.simulator, setup.channel.account)).toHaveLength(2);
    expect(await eventTypes(api, message.id)).toEqual(["message.sent"]);
  });

  it("marks the channel needs_attention on 401/20003, the message failed with 20003", async () => {
    const setup = await twilioChannel();
    const { conversation } = await smsConversation(setup.live, setup.channel.id);
    twilio.simulator.failNext(1, twilioErrors.authenticate(), (request) => request.form.From === setup.channel.account);

    const message = await postMessage(setup.live, { conversation_id: conversation.id, type: "text", text: "Hello" });

    const failed = await waitForStatus(api, setup.live, message.id, "failed");
    expect(failed.error.code).toBe("20003");
    const channel = await setup.live.get(`/channels/${setup.channel.id}`);
    expect(channel.body).toMatchObject({ status: "needs_attention" });
    expect(channel.body.status_reason).toMatch(/Twilio refused the channel's credentials \(code 20003\)/);
    expect(channel.body.status_reason).toMatch(/pnpm admin update-channel/);

    // Fresh credentials, checked with Twilio, make it active again; its number changes in place too.
    const from = usNumber();
    const updated = await admin(
      ...["update-channel", "--channel", setup.channel.id],
      ...["--setting", `auth_token=${twilio.simulator.authToken}`, "--setting", `from=${from}`],
    );
    expect(updated.code, JSON.stringify(updated.output)).toBe(0);
    expect(updated.output.channel).toMatchObject({ id: setup.channel.id, status: "active", status_reason: null });
    const [row] = await channelRows(setup.org.id);
    expect(row?.provider_account).toBe(from);
  });
});

describe("sending on a channel without MMS", () => {
  it("refuses an image before anything is stored", async () => {
    const setup = await twilioChannel();
    const { conversation } = await smsConversation(setup.live, setup.channel.id);
    const png = await makeImage("png", { width: 8, height: 8 });
    const uploaded = await upload(api, setup.org.live, { bytes: png, type: "image/png", filename: "a.png" });

    const response = await setup.live.post("/messages", {
      body: { conversation_id: conversation.id, type: "image", attachment_id: uploaded.body.id },
    });

    expectError(response, 422, "unsupported_message_type");
  });
});

/** An unsigned Twilio webhook POST to `url` from a local source address. */
function postTwilioFrom(url: string, localAddress: string): Promise<PostAnswer> {
  const body = new URLSearchParams({
    AccountSid: twilioSid("AC"),
    MessageSid: twilioSid("SM"),
    To: usNumber(),
  }).toString();
  const headers = { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": "c2lnbmF0dXJl" };
  return postFrom(url, localAddress, headers, body);
}
