import { createHash, createHmac } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyVonageSignature } from "../src/sms/vonage/signature.js";
import { parseVonageWebhook, vonageWebhookHints } from "../src/sms/vonage/webhook.js";
import {
  signVonageWebhook,
  startVonageSimulator,
  type VonageSimulator,
  vonageInboundSms,
  vonageSmsStatus,
} from "../testing/vonage-simulator.js";

const SECRET = "account-signature-secret-0123456789";
const APPLICATION_ID = "aaaaaaaa-bbbb-cccc-dddd-0123456789ab";
const BODY = '{"channel":"sms","message_uuid":"aaaaaaaa-bbbb-cccc-dddd-0123456789ab","text":"Hi"}';
const now = () => Math.floor(Date.now() / 1000);

/** The Authorization header of a signed webhook of exactly `BODY` bytes, with these claims. */
const bearer = (claims: Parameters<typeof signVonageWebhook>[2] = {}, secret = SECRET, body = BODY) =>
  `Bearer ${signVonageWebhook(body, secret, { application_id: APPLICATION_ID, ...claims })}`;

const check = (authorization: string | undefined, body = BODY, options = {}) =>
  verifyVonageSignature(Buffer.from(body), authorization, SECRET, { applicationId: APPLICATION_ID, ...options });

describe("verifyVonageSignature", () => {
  it("accepts Vonage's token for exactly these bytes and returns its claims", async () => {
    const result = await check(bearer({ api_key: "a1b2c3d4", jti: "c5ba8f24-1a14-4c10-bfdf-3fbe8ce511b5" }));

    expect(result).toEqual({
      valid: true,
      claims: {
        issuedAt: expect.any(Date),
        jti: "c5ba8f24-1a14-4c10-bfdf-3fbe8ce511b5",
        apiKey: "a1b2c3d4",
        applicationId: APPLICATION_ID,
      },
    });
  });

  it("accepts a token built by hand from Vonage's documented sample claims", async () => {
    // Independent of the simulator: header and claims as in Vonage's "Sample Signed JWT".
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
    const claims = {
      iat: now(),
      jti: "c5ba8f24-1a14-4c10-bfdf-3fbe8ce511b5",
      iss: "Vonage",
      payload_hash: createHash("sha256").update(BODY).digest("hex"),
      api_key: "a1b2c3d",
      application_id: APPLICATION_ID,
    };
    const input = `${encode({ alg: "HS256", typ: "JWT" })}.${encode(claims)}`;
    const token = `${input}.${createHmac("sha256", SECRET).update(input).digest("base64url")}`;

    expect(await check(`Bearer ${token}`)).toMatchObject({ valid: true });
  });

  it("refuses a token signed with another secret", async () => {
    expect(await check(bearer({}, "another-secret"))).toEqual({ valid: false, reason: "bad_signature" });
  });

  it("refuses a tampered body whose payload_hash no longer matches, even one that parses to the same JSON", async () => {
    const header = bearer();
    expect(await check(header, BODY.replace('"Hi"', '"Pay now"'))).toEqual({
      valid: false,
      reason: "payload_mismatch",
    });
    expect(await check(header, BODY.replace('"text":', '"text": '))).toEqual({
      valid: false,
      reason: "payload_mismatch",
    });
    expect(await check(header, `${BODY}\n`)).toEqual({ valid: false, reason: "payload_mismatch" });
  });

  it("refuses a token without payload_hash, or with one that is not a SHA-256", async () => {
    expect(await check(bearer({ payload_hash: null }))).toEqual({ valid: false, reason: "payload_mismatch" });
    expect(await check(bearer({ payload_hash: "abc" }))).toEqual({ valid: false, reason: "payload_mismatch" });
  });

  it("refuses a missing or empty Authorization header", async () => {
    expect(await check(undefined)).toEqual({ valid: false, reason: "missing" });
    expect(await check("  ")).toEqual({ valid: false, reason: "missing" });
  });

  it.each([
    ["not Bearer", `Basic ${Buffer.from("key:secret").toString("base64")}`],
    ["a token of two parts", "Bearer abc.def"],
    ["an unsigned token (alg none)", `Bearer ${Buffer.from('{"alg":"none"}').toString("base64url")}.e30.`],
    ["two tokens", `${bearer()}, ${bearer()}`],
  ])("refuses a malformed header (%s)", async (_case, header) => {
    expect(await check(header)).toMatchObject({ valid: false });
  });

  it("refuses an unsigned token whatever its claims", async () => {
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
    const claims = { iat: now(), iss: "Vonage", payload_hash: createHash("sha256").update(BODY).digest("hex") };
    const header = `Bearer ${encode({ alg: "none", typ: "JWT" })}.${encode(claims)}.`;
    expect(await check(header)).toEqual({ valid: false, reason: "malformed" });
  });

  it("refuses a token issued longer ago than the limit (5 minutes by default)", async () => {
    expect(await check(bearer({ iat: now() - 6 * 60 }))).toEqual({ valid: false, reason: "expired" });
    expect(await check(bearer({ iat: now() - 4 * 60 }))).toMatchObject({ valid: true });
    expect(await check(bearer({ iat: now() - 90 }), BODY, { maxAgeSeconds: 30 })).toEqual({
      valid: false,
      reason: "expired",
    });
  });

  it("refuses a token with an exp in the past", async () => {
    expect(await check(bearer({ exp: now() - 120 }))).toEqual({ valid: false, reason: "expired" });
  });

  it("refuses a token without iat, or issued in the future", async () => {
    expect(await check(bearer({ iat: null }))).toEqual({ valid: false, reason: "malformed" });
    expect(await check(bearer({ iat: now() + 10 * 60 }))).toEqual({ valid: false, reason: "issued_in_future" });
  });

  it("refuses a token that does not come from Vonage", async () => {
    expect(await check(bearer({ iss: "Mallory" }))).toEqual({ valid: false, reason: "wrong_issuer" });
    expect(await check(bearer({ iss: null }))).toEqual({ valid: false, reason: "wrong_issuer" });
  });

  it("refuses a token of another application of the same account, and takes one that names none", async () => {
    expect(await check(bearer({ application_id: "bbbbbbbb-bbbb-cccc-dddd-0123456789ab" }))).toEqual({
      valid: false,
      reason: "wrong_application",
    });
    expect(await check(bearer({ application_id: null }))).toMatchObject({
      valid: true,
      claims: { applicationId: null },
    });
  });

  it("refuses everything when the channel has no signature secret", async () => {
    expect(await verifyVonageSignature(Buffer.from(BODY), bearer({}, ""), "")).toEqual({
      valid: false,
      reason: "bad_signature",
    });
  });
});

describe("signed webhooks over HTTP", () => {
  let simulator: VonageSimulator;
  let receiver: Server;
  let url: string;
  const received: { status: number; reason: string }[] = [];

  beforeAll(async () => {
    simulator = await startVonageSimulator({ applicationId: APPLICATION_ID, signatureSecret: SECRET });
    // A receiver that does what Parley's endpoint will: verify the raw bytes, then parse.
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", async () => {
        const raw = Buffer.concat(chunks);
        const result = await verifyVonageSignature(raw, req.headers.authorization, SECRET, {
          applicationId: APPLICATION_ID,
        });
        const status = result.valid ? 200 : 401;
        received.push({ status, reason: result.valid ? "ok" : result.reason });
        res.writeHead(status, { "content-type": "application/json" });
        res.end(result.valid ? JSON.stringify(parseVonageWebhook(JSON.parse(raw.toString()))) : "{}");
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/v1/channels/webhooks/vonage`;
  });
  afterAll(async () => {
    await simulator.close();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });

  it("accepts an inbound SMS posted and signed as Vonage does", async () => {
    const payload = vonageInboundSms({ to: "447700900000", from: "447700900001", text: "Hello there" });

    const response = await simulator.postWebhook(url, payload);

    expect(response.status).toBe(200);
    expect(JSON.parse(response.body)).toMatchObject({ kind: "message", from: "+447700900001", text: "Hello there" });
  });

  it("refuses the same webhook signed with another secret, or without its header", async () => {
    const payload = vonageSmsStatus({
      messageUuid: "aaaaaaaa-bbbb-cccc-dddd-0123456789ab",
      status: "delivered",
      to: "447700900001",
      from: "447700900000",
    });
    received.length = 0;

    expect((await simulator.postWebhook(url, payload, { signatureSecret: "wrong" })).status).toBe(401);
    expect((await simulator.postWebhook(url, payload, { authorization: null })).status).toBe(401);
    expect(received).toEqual([
      { status: 401, reason: "bad_signature" },
      { status: 401, reason: "missing" },
    ]);
  });

  it("refuses a body changed after signing", async () => {
    const payload = vonageInboundSms({ to: "447700900000", from: "447700900001", text: "Hello" });
    const authorization = simulator.signWebhook(JSON.stringify(payload));

    const tampered = JSON.stringify({ ...payload, text: "Send me your password" });
    const response = await fetch(url, { method: "POST", headers: { authorization }, body: tampered });

    expect(response.status).toBe(401);
  });
});

describe("parseVonageWebhook", () => {
  const receivedAt = new Date("2025-06-01T12:00:00Z");

  it("reads an inbound SMS: numbers in E.164, the text, Vonage's time and keyword", () => {
    const payload = vonageInboundSms({
      to: "447700900000",
      from: "447700900001",
      text: "stop sending\u0000 please",
      messageUuid: "11111111-2222-3333-4444-555555555555",
      timestamp: new Date("2025-05-31T08:30:00Z"),
    });

    expect(parseVonageWebhook(payload, receivedAt)).toEqual({
      kind: "message",
      providerMessageId: "11111111-2222-3333-4444-555555555555",
      from: "+447700900001",
      to: "+447700900000",
      text: "stop sending please",
      timestamp: new Date("2025-05-31T08:30:00Z"),
      keyword: "STOP",
    });
  });

  it("takes the time it was received when Vonage's timestamp is missing or unreadable", () => {
    const payload = { ...vonageInboundSms({ to: "447700900000", from: "447700900001", text: "x" }), timestamp: "soon" };
    expect(parseVonageWebhook(payload, receivedAt)).toMatchObject({ timestamp: receivedAt });
  });

  const status = (input: Partial<Parameters<typeof vonageSmsStatus>[0]> = {}) =>
    vonageSmsStatus({
      messageUuid: "aaaaaaaa-bbbb-cccc-dddd-0123456789ab",
      status: "submitted",
      to: "447700900001",
      from: "447700900000",
      clientRef: "msg_01J9ZX",
      timestamp: new Date("2025-06-01T11:59:00Z"),
      ...input,
    });

  it.each([
    ["submitted", "sent"],
    ["delivered", "delivered"],
    ["read", "read"],
  ] as const)("maps status %s to %s, with the client_ref and numbers in E.164", (vonage, parley) => {
    expect(parseVonageWebhook(status({ status: vonage }), receivedAt)).toEqual({
      kind: "status",
      providerMessageId: "aaaaaaaa-bbbb-cccc-dddd-0123456789ab",
      clientRef: "msg_01J9ZX",
      status: parley,
      providerStatus: vonage,
      error: null,
      to: "+447700900001",
      from: "+447700900000",
      timestamp: new Date("2025-06-01T11:59:00Z"),
    });
  });

  it.each(["rejected", "undeliverable"] as const)(
    "maps status %s to failed with Vonage's code untranslated",
    (vonage) => {
      const item = parseVonageWebhook(
        status({
          status: vonage,
          error: {
            code: "1050",
            title: "Number barred",
            detail: "The number you are trying to submit to is blacklisted and may not receive messages.",
          },
        }),
        receivedAt,
      );

      expect(item).toMatchObject({
        kind: "status",
        status: "failed",
        providerStatus: vonage,
        error: {
          code: "1050",
          message: "Number barred: The number you are trying to submit to is blacklisted and may not receive messages.",
        },
      });
    },
  );

  it("takes the title as the code when the error's type has no fragment, and the status when there is no error", () => {
    const titled = { ...status({ status: "rejected" }), error: { title: 1320, detail: "Message failed" } };
    expect(parseVonageWebhook(titled)).toMatchObject({ error: { code: "1320", message: "1320: Message failed" } });
    expect(parseVonageWebhook(status({ status: "undeliverable" }))).toMatchObject({
      status: "failed",
      error: { code: "undeliverable", message: "Vonage reported the message undeliverable" },
    });
  });

  it("keeps an alphanumeric sender as it is, not as a number", () => {
    expect(parseVonageWebhook(status({ from: "Parley" }))).toMatchObject({ from: "Parley", to: "+447700900001" });
  });

  it.each([
    ["a status Parley has no word for", status({ status: "accepted" })],
    ["another channel's status", { ...status(), channel: "whatsapp" }],
    ["another channel's message", { ...vonageInboundSms({ to: "1", from: "2", text: "x" }), channel: "whatsapp" }],
    ["a body without message_uuid", { channel: "sms", to: "447700900000", from: "447700900001", text: "x" }],
    ["not an object", "[]"],
  ])("ignores %s", (_case, body) => {
    expect(parseVonageWebhook(body)).toBeNull();
  });
});

describe("vonageWebhookHints", () => {
  it("names the channel's own number and the unverified application id", () => {
    const authorization = bearer();
    expect(
      vonageWebhookHints(vonageInboundSms({ to: "447700900000", from: "447700900001", text: "x" }), authorization),
    ).toEqual({ number: "447700900000", applicationId: APPLICATION_ID });
    expect(
      vonageWebhookHints(
        vonageSmsStatus({ messageUuid: "u", status: "delivered", to: "447700900001", from: "447700900000" }),
        undefined,
      ),
    ).toEqual({ number: "447700900000", applicationId: null });
  });
});
