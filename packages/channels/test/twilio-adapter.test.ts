import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type OutboundAttachment, type OutboundMessage, TemporaryChannelError } from "../src/adapter.js";
import { type TwilioAdapterOptions, twilioSmsAdapter } from "../src/sms/twilio/adapter.js";
import { isTwilioCredentialRefusal } from "../src/sms/twilio/errors.js";
import { startTwilioSimulator, type TwilioSimulator, twilioErrors } from "../testing/twilio-simulator.js";

const PUBLIC_BASE_URL = "https://api.parley.example/";
const STATUS_CALLBACK = "https://api.parley.example/v1/channels/webhooks/twilio";
const PUBLIC_URL = "https://api.parley.example/v1/files/att_01?expires=1751371200&signature=abc123";

let simulator: TwilioSimulator;
let options: TwilioAdapterOptions;

beforeAll(async () => {
  simulator = await startTwilioSimulator();
  options = { twilio: simulator.options(), publicBaseUrl: PUBLIC_BASE_URL };
});
afterAll(() => simulator.close());
beforeEach(() => simulator.reset());

function settings(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    provider: "twilio",
    account_sid: simulator.accountSid,
    auth_token: simulator.authToken,
    from: "+14155550100",
    ...overrides,
  };
}

function image(): OutboundAttachment {
  return {
    url: "https://api.parley.example/v1/attachments/att_01/content",
    publicUrl: PUBLIC_URL,
    contentType: "image/jpeg",
    filename: "photo.jpg",
    size: 1234,
    read: async () => Buffer.from("file"),
  };
}

function outbound(overrides: Partial<OutboundMessage> = {}, channelSettings = settings()): OutboundMessage {
  return {
    id: "msg_01JZ0000000000000000000001",
    type: "text",
    text: "Your order has shipped",
    attachment: null,
    contact: { name: "Ada", email: null, phone: "+16505551234", externalId: null },
    recipient: "+16505551234",
    // The `sms` channel type is being added to the catalogue beside this module.
    channel: { id: "ch_01", type: "sms" as OutboundMessage["channel"]["type"], settings: channelSettings },
    conversation: { id: "conv_01", subject: null, threadIds: [] },
    lastInboundAt: null,
    attempt: 1,
    ...overrides,
  };
}

function onlyRequest() {
  expect(simulator.requests).toHaveLength(1);
  const [request] = simulator.requests;
  if (!request) throw new Error("no request");
  return request;
}

describe("twilioSmsAdapter send", () => {
  it("sends the text to the recipient with the status callback, and returns Twilio's sid", async () => {
    const result = await twilioSmsAdapter(options).send(outbound());

    const request = onlyRequest();
    expect(request.path).toBe(`/2010-04-01/Accounts/${simulator.accountSid}/Messages.json`);
    expect(request.form).toEqual({
      To: "+16505551234",
      From: "+14155550100",
      Body: "Your order has shipped",
      StatusCallback: STATUS_CALLBACK,
    });
    expect(result).toEqual({
      outcome: "sent",
      providerMessageId: expect.stringMatching(/^SM[0-9a-f]{32}$/),
      receipts: [],
    });
  });

  it("writes the recipient in E.164 whatever spacing it was stored with", async () => {
    await twilioSmsAdapter(options).send(outbound({ recipient: " +1 650-555-1234 " }));
    expect(onlyRequest().form.To).toBe("+16505551234");
  });

  it("sends an image's public URL as MediaUrl, with the caption as Body, when the channel has mms", async () => {
    const message = outbound({ type: "image", text: "The parcel", attachment: image() }, settings({ mms: "true" }));
    const result = await twilioSmsAdapter(options).send(message);

    expect(onlyRequest().fields).toEqual([
      ["To", "+16505551234"],
      ["From", "+14155550100"],
      ["Body", "The parcel"],
      ["MediaUrl", PUBLIC_URL],
      ["StatusCallback", STATUS_CALLBACK],
    ]);
    expect(result).toMatchObject({ outcome: "sent", providerMessageId: expect.stringMatching(/^MM/) });
  });

  it("sends an image without caption as MediaUrl alone", async () => {
    const message = outbound({ type: "image", text: null, attachment: image() }, settings({ mms: true }));
    await twilioSmsAdapter(options).send(message);
    expect(onlyRequest().form).toEqual({
      To: "+16505551234",
      From: "+14155550100",
      MediaUrl: PUBLIC_URL,
      StatusCallback: STATUS_CALLBACK,
    });
  });

  it.each([
    [
      "an image without mms",
      { type: "image", attachment: image() },
      {},
      "SMS through Twilio cannot carry image without mms=true in the channel's settings",
    ],
    [
      "an image with mms=false",
      { type: "image", attachment: image() },
      { mms: "false" },
      "SMS through Twilio cannot carry image without mms=true in the channel's settings",
    ],
    ["a video", { type: "video", attachment: image() }, { mms: true }, "SMS through Twilio cannot carry video"],
    [
      "a document",
      { type: "document", attachment: image() },
      { mms: true },
      "SMS through Twilio cannot carry document",
    ],
  ] as const)("refuses %s without asking Twilio", async (_, overrides, channelSettings, message) => {
    const result = await twilioSmsAdapter(options).send(outbound(overrides, settings(channelSettings)));

    expect(result).toEqual({ outcome: "failed", error: { code: "unsupported_message_type", message } });
    expect(simulator.requests).toHaveLength(0);
  });

  it("refuses a message without recipient, or with one that is not a phone number", async () => {
    const adapter = twilioSmsAdapter(options);
    expect(await adapter.send(outbound({ recipient: null }))).toMatchObject({ error: { code: "recipient_unknown" } });
    expect(await adapter.send(outbound({ recipient: "6505551234" }))).toMatchObject({
      error: { code: "recipient_invalid" },
    });
    expect(simulator.requests).toHaveLength(0);
  });

  it("refuses invalid settings by name, never showing their values", async () => {
    const result = await twilioSmsAdapter(options).send(
      outbound({}, settings({ auth_token: "", account_sid: "AC-not-valid", messaging_service_sid: "MG1" })),
    );

    expect(result).toMatchObject({ outcome: "failed", error: { code: "channel_misconfigured" } });
    const message = result.outcome === "failed" ? result.error.message : "";
    expect(message).toContain("account_sid:");
    expect(message).toContain("auth_token:");
    expect(message).toContain("set exactly one sender");
    expect(message).not.toContain("AC-not-valid");
    expect(simulator.requests).toHaveLength(0);
  });

  it("fails with Twilio's code, untranslated, when Twilio refuses the message", async () => {
    simulator.failNext(1, twilioErrors.unsubscribed());
    const result = await twilioSmsAdapter(options).send(outbound());

    expect(result).toEqual({
      outcome: "failed",
      error: { code: "21610", message: "Attempt to send to unsubscribed recipient" },
    });
  });

  it("fails with 20003 when the credentials are refused: the channel needs attention", async () => {
    const result = await twilioSmsAdapter(options).send(outbound({}, settings({ auth_token: "revoked-token" })));

    expect(result).toEqual({ outcome: "failed", error: { code: "20003", message: "Authenticate" } });
    if (result.outcome !== "failed") throw new Error("not failed");
    expect(isTwilioCredentialRefusal(result.error)).toBe(true);
    expect(isTwilioCredentialRefusal({ code: "21610" })).toBe(false);
  });

  it.each([
    ["429", twilioErrors.tooManyRequests()],
    ["500", twilioErrors.internal()],
    ["502", { status: 502, body: "Bad Gateway" }],
  ])("throws a TemporaryChannelError on %s, for the job to retry", async (_, answer) => {
    simulator.failNext(1, answer);
    await expect(twilioSmsAdapter(options).send(outbound())).rejects.toBeInstanceOf(TemporaryChannelError);
  });
});

describe("twilioSmsAdapter messagesPerSecond", () => {
  it.each([
    [{ from: "+14155550100" }, 1],
    [{ from: "+18885550100" }, 3],
    [{ from: "55555" }, 100],
    [{ from: undefined, messaging_service_sid: "MG0123456789abcdef0123456789abcdef" }, 1],
    [{ from: "+14155550100", mps: "4" }, 4],
  ])("paces the channel %j at %i a second", (overrides, pace) => {
    expect(twilioSmsAdapter(options, settings(overrides)).messagesPerSecond).toBe(pace);
  });

  it("paces a channel whose settings it cannot read at a long code's 1 a second", () => {
    expect(twilioSmsAdapter(options).messagesPerSecond).toBe(1);
    expect(twilioSmsAdapter(options, { from: "nope" }).messagesPerSecond).toBe(1);
  });
});
