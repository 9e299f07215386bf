import { createHmac } from "node:crypto";
import { sendWebhook, whatsappStatus, whatsappTextMessage } from "@parley/channels/testing";
import { describe, expect, it } from "vitest";
import { eventTypes, statusOf, waitForStatus } from "./delivery-helpers.js";
import { type ApiResponse, expectError, setupOrganization, useTestApi, useTestWorker } from "./harness.js";
import {
  connectMetaChannel,
  deliverWebhook,
  messagesByProviderId,
  metaWebhookJobs,
  metaWebhookUrl,
  postMessage,
  providerIdOf,
  randomSecret,
  useMetaSimulator,
  waId,
  waitForInbound,
  waitForWebhookJobs,
} from "./meta-helpers.js";

/**
 * Meta's shared webhook (`/v1/channels/webhooks/meta`): the subscription handshake, the
 * signature check over the raw body, which channels a signed delivery may touch, and
 * the channel secrets it is checked with, which never leave the database in the clear.
 */
const meta = useMetaSimulator();
const api = useTestApi({}, { ownDatabase: true });
useTestWorker(api, () => ({ meta: meta.simulator.options() }));

/** The body as JSON when the server says it is JSON (an error), else the text (the challenge). */
async function responseOf(response: Response): Promise<ApiResponse> {
  const text = await response.text();
  const json = response.headers.get("content-type")?.startsWith("application/json");
  return { status: response.status, headers: response.headers, body: json ? JSON.parse(text) : text };
}

async function handshake(query: Record<string, string>): Promise<ApiResponse> {
  const url = new URL(metaWebhookUrl(api));
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
  return responseOf(await fetch(url));
}

/** A raw POST to the webhook with the given signature header (none when null). */
async function postRaw(raw: string, signature: string | null): Promise<ApiResponse> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (signature !== null) headers["x-hub-signature-256"] = signature;
  return responseOf(await fetch(metaWebhookUrl(api), { method: "POST", headers, body: raw }));
}

/** A payload as Meta would post it, signed with `secret`, whatever the answer. */
function postSigned(payload: unknown, secret: string): Promise<Response> {
  const raw = JSON.stringify(payload);
  return fetch(metaWebhookUrl(api), {
    method: "POST",
    headers: { "content-type": "application/json", "x-hub-signature-256": sign(raw, secret) },
    body: raw,
  });
}

function sign(raw: string, secret: string): string {
  return `sha256=${createHmac("sha256", secret).update(raw).digest("hex")}`;
}

describe("the subscription handshake (GET)", () => {
  it("answers 200 with the challenge as plain text for a connected channel's verify token", async () => {
    const { org } = await setupOrganization(api);
    const channel = await connectMetaChannel(api, meta.simulator, org.id, "whatsapp");
    const response = await handshake({
      "hub.mode": "subscribe",
      "hub.verify_token": channel.verifyToken,
      "hub.challenge": "1158201444",
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(response.body).toBe("1158201444");
  });

  it("works for each Meta channel type's own verify token", async () => {
    const { org } = await setupOrganization(api);
    for (const type of ["messenger", "instagram"] as const) {
      const channel = await connectMetaChannel(api, meta.simulator, org.id, type);
      const response = await handshake({
        "hub.mode": "subscribe",
        "hub.verify_token": channel.verifyToken,
        "hub.challenge": `challenge-${type}`,
      });
      expect(response.status).toBe(200);
      expect(response.body).toBe(`challenge-${type}`);
    }
  });

  it("refuses a verify token no connected channel has with 403 invalid_verify_token", async () => {
    const { org } = await setupOrganization(api);
    const channel = await connectMetaChannel(api, meta.simulator, org.id, "whatsapp");
    for (const token of [randomSecret("verify"), `${channel.verifyToken}x`, channel.appSecret, channel.accessToken]) {
      const response = await handshake({ "hub.mode": "subscribe", "hub.verify_token": token, "hub.challenge": "42" });
      expectError(response, 403, "invalid_verify_token");
    }
  });

  it("refuses a handshake with a parameter missing, or another mode, with 403", async () => {
    const { org } = await setupOrganization(api);
    const channel = await connectMetaChannel(api, meta.simulator, org.id, "whatsapp");
    const complete = { "hub.mode": "subscribe", "hub.verify_token": channel.verifyToken, "hub.challenge": "42" };
    const variants: Record<string, string>[] = [
      {},
      { "hub.verify_token": channel.verifyToken, "hub.challenge": "42" },
      { "hub.mode": "subscribe", "hub.challenge": "42" },
      { "hub.mode": "subscribe", "hub.verify_token": channel.verifyToken },
      { ...complete, "hub.mode": "unsubscribe" },
    ];
    for (const query of variants) {
      const response = await handshake(query);
      expectError(response, 403, "invalid_verify_token");
    }
    // The complete handshake still works: the refusals were about what was missing.
    expect((await handshake(complete)).status).toBe(200);
  });
});

describe("signed deliveries (POST)", () => {
  it("refuses a missing, wrong, foreign or stale signature with 401 invalid_signature and stores nothing", async () => {
    const { org, live } = await setupOrganization(api);
    const channel = await connectMetaChannel(api, meta.simulator, org.id, "whatsapp");
    const refusedId = `wamid.refused-${randomSecret("m")}`;
    const raw = JSON.stringify(
      whatsappTextMessage({ phoneNumberId: channel.accountId, from: waId(), id: refusedId, text: "Let me in" }),
    );
    const altered = raw.replace("Let me in", "Let me In");
    expect(altered).not.toBe(raw);

    const attempts: [string, string | null, string][] = [
      ["no header", null, raw],
      ["an empty header", "", raw],
      ["a wrong signature", `sha256=${"0".repeat(64)}`, raw],
      ["a malformed header", sign(raw, channel.appSecret).replace("sha256=", "sha1="), raw],
      ["another app's secret", sign(raw, randomSecret("appsecret")), raw],
      ["the verify token as key", sign(raw, channel.verifyToken), raw],
      ["a body altered after signing", sign(raw, channel.appSecret), altered],
    ];
    for (const [what, signature, body] of attempts) {
      const response = await postRaw(body, signature);
      expect(response.status, what).toBe(401);
      expectError(response, 401, "invalid_signature");
      expect(await metaWebhookJobs(api), `no job after ${what}`).toEqual([]);
    }

    // A delivery signed right, sent after the refused ones, is processed; the refused never are.
    const acceptedId = `wamid.accepted-${randomSecret("m")}`;
    await deliverWebhook(
      api,
      whatsappTextMessage({ phoneNumberId: channel.accountId, from: waId(), id: acceptedId, text: "Hello" }),
      channel.appSecret,
    );
    await waitForInbound(api, live, acceptedId);
    await waitForWebhookJobs(api);
    expect(await messagesByProviderId(api, refusedId)).toEqual([]);
  });

  it("answers 400 invalid_json for a signed body that is not JSON", async () => {
    const { org } = await setupOrganization(api);
    const channel = await connectMetaChannel(api, meta.simulator, org.id, "whatsapp");
    const raw = "{not json";
    expectError(await postRaw(raw, sign(raw, channel.appSecret)), 400, "invalid_json");
    expect(await metaWebhookJobs(api)).toEqual([]);
  });

  it("answers 200 EVENT_RECEIVED for a signed delivery about no connected account, and stores nothing", async () => {
    const { org } = await setupOrganization(api);
    const channel = await connectMetaChannel(api, meta.simulator, org.id, "whatsapp");
    const id = `wamid.nobody-${randomSecret("m")}`;
    const response = await sendWebhook(
      metaWebhookUrl(api),
      whatsappTextMessage({ phoneNumberId: "999000111222333", from: waId(), id, text: "Hi" }),
      channel.appSecret,
    );
    expect(response).toEqual({ status: 200, body: "EVENT_RECEIVED" });
    expect(await metaWebhookJobs(api)).toEqual([]);
    expect(await messagesByProviderId(api, id)).toEqual([]);
  });
});

describe("one app cannot speak for another's accounts", () => {
  // A delivery is checked only against the app secrets of the channels it names.
  it("does not apply to organization A's number a message signed with organization B's app secret", async () => {
    const a = await setupOrganization(api);
    const b = await setupOrganization(api);
    const channelA = await connectMetaChannel(api, meta.simulator, a.org.id, "whatsapp");
    const channelB = await connectMetaChannel(api, meta.simulator, b.org.id, "whatsapp");
    const forgedId = `wamid.forged-${randomSecret("m")}`;
    const forged = whatsappTextMessage({ phoneNumberId: channelA.accountId, from: waId(), id: forgedId, text: "Hi A" });

    // B's signature is genuine, but B's secret is not A's: refused, and nothing reaches A.
    expectError(await responseOf(await postSigned(forged, channelB.appSecret)), 401, "invalid_signature");
    expect(await metaWebhookJobs(api)).toEqual([]);
    expect(await messagesByProviderId(api, forgedId)).toEqual([]);

    // One delivery naming both numbers, signed by B: only B's entry is applied.
    const forB = `wamid.forb-${randomSecret("m")}`;
    const forA = `wamid.fora-${randomSecret("m")}`;
    const entryB = whatsappTextMessage({ phoneNumberId: channelB.accountId, from: waId(), id: forB, text: "Hi B" });
    const entryA = whatsappTextMessage({ phoneNumberId: channelA.accountId, from: waId(), id: forA, text: "Hi A" });
    await deliverWebhook(api, { ...entryB, entry: [...entryA.entry, ...entryB.entry] }, channelB.appSecret);
    const received = await waitForInbound(api, b.live, forB);
    expect(received.text).toBe("Hi B");
    await waitForWebhookJobs(api);
    expect(await messagesByProviderId(api, forA)).toEqual([]);
    expect((await messagesByProviderId(api, forB)).map((row) => row.organization_id)).toEqual([b.org.id]);

    // Signed with A's own secret, the same kind of message is applied to A.
    const genuineId = `wamid.genuine-${randomSecret("m")}`;
    await deliverWebhook(
      api,
      whatsappTextMessage({ phoneNumberId: channelA.accountId, from: waId(), id: genuineId, text: "Hi A" }),
      channelA.appSecret,
    );
    await waitForInbound(api, a.live, genuineId);
    expect((await messagesByProviderId(api, genuineId)).map((row) => row.organization_id)).toEqual([a.org.id]);
  });

  it("does not apply to A's sent message a status signed with B's app secret", async () => {
    const a = await setupOrganization(api);
    const b = await setupOrganization(api);
    const channelA = await connectMetaChannel(api, meta.simulator, a.org.id, "whatsapp");
    const channelB = await connectMetaChannel(api, meta.simulator, b.org.id, "whatsapp");
    const customer = waId();
    const inboundId = `wamid.in-${randomSecret("m")}`;
    await deliverWebhook(
      api,
      whatsappTextMessage({ phoneNumberId: channelA.accountId, from: customer, id: inboundId, text: "Hello" }),
      channelA.appSecret,
    );
    const inbound = await waitForInbound(api, a.live, inboundId);
    const queued = await postMessage(a.live, { conversation_id: inbound.conversation_id, type: "text", text: "Hi!" });
    await waitForStatus(api, a.live, queued.id, "sent");
    const wamid = await providerIdOf(api, queued.id);
    const read = whatsappStatus({
      phoneNumberId: channelA.accountId,
      id: wamid,
      status: "read",
      recipientId: customer,
      callbackData: queued.id,
    });

    expectError(await responseOf(await postSigned(read, channelB.appSecret)), 401, "invalid_signature");
    await waitForWebhookJobs(api);
    expect(await statusOf(api, queued.id)).toBe("sent");

    await deliverWebhook(api, read, channelA.appSecret);
    await waitForStatus(api, a.live, queued.id, "read");
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent", "message.read"]);
  });
});

describe("channel secrets at rest", () => {
  it("keeps access_token, app_secret and verify_token sealed, and the API never returns them", async () => {
    const { org, live } = await setupOrganization(api);
    for (const type of ["whatsapp", "messenger", "instagram"] as const) {
      const channel = await connectMetaChannel(api, meta.simulator, org.id, type);
      const secrets = [channel.accessToken, channel.appSecret, channel.verifyToken];
      const [row] = await api.client.sql<{ settings: Record<string, unknown>; secret_settings: string | null }[]>`
        select settings, secret_settings from channels where id = ${channel.id}`;
      expect(row?.settings).toBeDefined();
      expect(Object.keys(row?.settings ?? {})).not.toEqual(
        expect.arrayContaining([expect.stringMatching(/^(access_token|app_secret|verify_token)$/)]),
      );
      expect(Object.values(row?.settings ?? {})).toEqual([channel.accountId]);
      expect(row?.secret_settings).toEqual(expect.any(String));
      const stored = `${JSON.stringify(row?.settings)} ${row?.secret_settings}`;
      for (const secret of secrets) expect(stored).not.toContain(secret);
      // Not base64 of them either: sealed, not encoded.
      for (const secret of secrets) {
        expect(stored).not.toContain(Buffer.from(secret).toString("base64").slice(0, 24));
        expect(stored).not.toContain(Buffer.from(secret).toString("base64url").slice(0, 24));
      }
      // ...yet the API opens them: the handshake knows the verify token.
      expect(
        (await handshake({ "hub.mode": "subscribe", "hub.verify_token": channel.verifyToken, "hub.challenge": "1" }))
          .status,
      ).toBe(200);

      const got = await live.get(`/channels/${channel.id}`);
      expect(got.status).toBe(200);
      expect(got.body).toMatchObject({ object: "channel", id: channel.id, type, environment: "live", sandbox: false });
      expect(got.body).not.toHaveProperty("settings");
      const listed = await live.get("/channels", { query: { type } });
      expect(listed.status).toBe(200);
      for (const text of [JSON.stringify(got.body), JSON.stringify(listed.body)]) {
        for (const secret of secrets) expect(text).not.toContain(secret);
        expect(text).not.toMatch(/access_token|app_secret|verify_token/);
      }
    }
  });
});
