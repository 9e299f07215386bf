import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { smsOptOutKeyword } from "../src/sms/opt-out-keywords.js";
import { verifyTwilioSignature } from "../src/sms/twilio/signature.js";
import { parseTwilioWebhook } from "../src/sms/twilio/webhook.js";
import { startTwilioSimulator, type TwilioSimulator, twilioSid } from "../testing/twilio-simulator.js";

const WEBHOOK = "https://api.parley.example/v1/channels/webhooks/twilio";
const NUMBER = "+14155550100";
const CUSTOMER = "+16505551234";

let simulator: TwilioSimulator;

beforeAll(async () => {
  simulator = await startTwilioSimulator();
});
afterAll(() => simulator.close());

describe("parseTwilioWebhook: incoming messages", () => {
  it("reads an MMS with two files, as Twilio posts it", () => {
    const first = simulator.addMedia(Buffer.from("a"), "image/jpeg");
    const second = simulator.addMedia(Buffer.from("b"), "image/png");
    const { params } = simulator.inboundMessage(WEBHOOK, {
      from: CUSTOMER,
      to: NUMBER,
      body: "Here are the photos",
      media: [
        { url: first.url, contentType: "image/jpeg" },
        { url: second.url, contentType: "image/png" },
      ],
    });

    expect(parseTwilioWebhook(params)).toEqual({
      kind: "inbound",
      accountSid: simulator.accountSid,
      messagingServiceSid: null,
      messageSid: params.MessageSid,
      from: CUSTOMER,
      to: NUMBER,
      body: "Here are the photos",
      media: [
        { url: first.url, contentType: "image/jpeg" },
        { url: second.url, contentType: "image/png" },
      ],
      optOutType: null,
      optOut: null,
    });
  });

  it("reads a text, its Messaging Service and Twilio's OptOutType", () => {
    const service = twilioSid("MG");
    const { params } = simulator.inboundMessage(WEBHOOK, {
      from: CUSTOMER,
      to: NUMBER,
      body: "arret",
      messagingServiceSid: service,
      optOutType: "STOP",
    });

    expect(parseTwilioWebhook(params)).toMatchObject({
      kind: "inbound",
      messagingServiceSid: service,
      body: "arret",
      media: [],
      optOutType: "STOP",
      optOut: "stop",
    });
  });

  it("reads the opt-out keyword of a plain STOP", () => {
    const { params } = simulator.inboundMessage(WEBHOOK, { from: CUSTOMER, to: NUMBER, body: " Stop " });
    expect(parseTwilioWebhook(params)).toMatchObject({ kind: "inbound", body: " Stop ", optOut: "stop" });
  });

  it("keeps only NumMedia files, and a body the database can store", () => {
    const params = {
      AccountSid: simulator.accountSid,
      MessageSid: twilioSid("MM"),
      From: CUSTOMER,
      To: NUMBER,
      Body: "nul\u0000here",
      NumMedia: "1",
      MediaUrl0: "https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM1/Media/ME1",
      MediaUrl1: "https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM1/Media/ME2",
    };
    expect(parseTwilioWebhook(params)).toMatchObject({
      body: "nulhere",
      media: [{ url: params.MediaUrl0, contentType: null }],
    });
  });

  it("ignores a request that is not a Twilio message", () => {
    expect(parseTwilioWebhook({ From: CUSTOMER, Body: "hi" })).toMatchObject({ kind: "ignored" });
    expect(parseTwilioWebhook({ AccountSid: simulator.accountSid, MessageSid: "SM1", Body: "hi" })).toMatchObject({
      kind: "ignored",
      reason: "an incoming message without From or To",
    });
  });
});

describe("parseTwilioWebhook: status callbacks", () => {
  const messageSid = twilioSid("SM");

  it.each([
    ["sent", "sent"],
    ["delivered", "delivered"],
    ["read", "read"],
  ] as const)("maps %s to Parley's %s", (twilioStatus, status) => {
    const { params } = simulator.statusCallback(WEBHOOK, { messageSid, status: twilioStatus, to: CUSTOMER });
    expect(parseTwilioWebhook(params)).toEqual({
      kind: "status",
      accountSid: simulator.accountSid,
      messageSid,
      twilioStatus,
      status,
      errorCode: null,
      error: null,
    });
  });

  it.each([
    ["undelivered", 30007],
    ["failed", 30008],
  ] as const)("fails the message on %s, keeping Twilio's ErrorCode untranslated", (twilioStatus, code) => {
    const { params } = simulator.statusCallback(WEBHOOK, {
      messageSid,
      status: twilioStatus,
      to: CUSTOMER,
      errorCode: code,
    });
    expect(parseTwilioWebhook(params)).toEqual({
      kind: "status",
      accountSid: simulator.accountSid,
      messageSid,
      twilioStatus,
      status: "failed",
      errorCode: String(code),
      error: {
        code: String(code),
        message: `Twilio reported the message ${twilioStatus} with error ${code} (https://www.twilio.com/docs/api/errors/${code})`,
      },
    });
  });

  it("fails the message with Twilio's status when no ErrorCode came", () => {
    const { params } = simulator.statusCallback(WEBHOOK, { messageSid, status: "undelivered", to: CUSTOMER });
    expect(parseTwilioWebhook(params)).toMatchObject({
      status: "failed",
      errorCode: null,
      error: { code: "undelivered", message: "Twilio reported the message undelivered" },
    });
  });

  it.each(["queued", "sending", "canceled"] as const)("ignores the interim status %s", (status) => {
    const { params } = simulator.statusCallback(WEBHOOK, { messageSid, status, to: CUSTOMER });
    expect(parseTwilioWebhook(params)).toEqual({
      kind: "ignored",
      reason: `status ${status}`,
      accountSid: simulator.accountSid,
      messageSid,
    });
  });

  it.each(["accepted", "scheduled", "partially_delivered"])("ignores %s too", (status) => {
    const params = { AccountSid: simulator.accountSid, MessageSid: messageSid, MessageStatus: status, To: CUSTOMER };
    expect(parseTwilioWebhook(params)).toMatchObject({ kind: "ignored", reason: `status ${status}` });
  });

  it("reads a repeated parameter's first value", () => {
    const params = {
      AccountSid: simulator.accountSid,
      MessageSid: [messageSid, "SMother"],
      MessageStatus: ["delivered"],
    };
    expect(parseTwilioWebhook(params)).toMatchObject({ kind: "status", messageSid, status: "delivered" });
  });
});

describe("smsOptOutKeyword", () => {
  it.each(["STOP", "stop", "StopAll", "UNSUBSCRIBE", "cancel", "End", "QUIT", "revoke", "OPTOUT", "  stop\n"])(
    "reads %j as an opt-out",
    (body) => {
      expect(smsOptOutKeyword(body)).toBe("stop");
    },
  );

  it.each(["START", "yes", "Unstop", " start "])("reads %j as an opt-in", (body) => {
    expect(smsOptOutKeyword(body)).toBe("start");
  });

  it.each(["stop please", "please cancel", "STOP.", "HELP", "INFO", "", "stopp", "opt out"])(
    "reads %j as neither: only the keyword alone counts",
    (body) => {
      expect(smsOptOutKeyword(body)).toBeNull();
    },
  );

  it("lets Twilio's OptOutType win over the text", () => {
    expect(smsOptOutKeyword("arrêt", "STOP")).toBe("stop");
    expect(smsOptOutKeyword("reprendre", "START")).toBe("start");
    expect(smsOptOutKeyword("STOP", "HELP")).toBeNull();
    expect(smsOptOutKeyword("STOP", "START")).toBe("start");
    expect(smsOptOutKeyword("stop", "stop")).toBe("stop");
  });

  it("falls back to the text for an OptOutType it does not know", () => {
    expect(smsOptOutKeyword("STOP", "SOMETHING_NEW")).toBe("stop");
    expect(smsOptOutKeyword(null, null)).toBeNull();
  });
});

describe("a signed webhook on the wire", () => {
  let receiver: Server;
  let url: string;
  const received: { params: Record<string, string | string[]>; signature: string | undefined }[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const params: Record<string, string | string[]> = {};
        for (const [name, value] of new URLSearchParams(Buffer.concat(chunks).toString("utf8"))) {
          const existing = params[name];
          params[name] = existing === undefined ? value : ([] as string[]).concat(existing, value);
        }
        const header = req.headers["x-twilio-signature"];
        received.push({ params, signature: Array.isArray(header) ? header[0] : header });
        res.writeHead(200, { "content-type": "text/xml" });
        res.end("<Response></Response>");
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/v1/channels/webhooks/twilio?channel=ch_01`;
  });
  afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

  it("verifies as Twilio's once decoded from the form body, and is then parsed", async () => {
    const callback = simulator.inboundMessage(url, { from: CUSTOMER, to: NUMBER, body: "Hello + wörld & 👋 = ?" });
    expect((await simulator.send(callback)).status).toBe(200);

    const last = received.at(-1);
    if (!last) throw new Error("nothing received");
    expect(verifyTwilioSignature(simulator.authToken, url, last.params, last.signature)).toBe(true);
    expect(parseTwilioWebhook(last.params)).toMatchObject({ kind: "inbound", body: "Hello + wörld & 👋 = ?" });
    // Another account's token, another URL, a forged or missing header: refused.
    expect(verifyTwilioSignature("another-token", url, last.params, last.signature)).toBe(false);
    expect(verifyTwilioSignature(simulator.authToken, url.replace("ch_01", "ch_02"), last.params, last.signature)).toBe(
      false,
    );
    expect(verifyTwilioSignature(simulator.authToken, url, { ...last.params, Body: "Hi" }, last.signature)).toBe(false);
  });

  it("arrives without the header when told to, and then does not verify", async () => {
    const callback = simulator.statusCallback(url, { messageSid: twilioSid("SM"), status: "delivered", to: CUSTOMER });
    await simulator.send(callback, { signature: null });

    const last = received.at(-1);
    if (!last) throw new Error("nothing received");
    expect(last.signature).toBeUndefined();
    expect(verifyTwilioSignature(simulator.authToken, url, last.params, last.signature)).toBe(false);
  });
});
