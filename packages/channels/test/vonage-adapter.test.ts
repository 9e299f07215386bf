import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type OutboundMessage, TemporaryChannelError } from "../src/adapter.js";
import { isVonageCredentialRefusal, vonageSmsAdapter } from "../src/sms/vonage/adapter.js";
import {
  generateVonageKeyPair,
  startVonageSimulator,
  type VonageSimulator,
  vonageErrors,
} from "../testing/vonage-simulator.js";

describe("vonageSmsAdapter", () => {
  let simulator: VonageSimulator;
  let settings: Record<string, unknown>;
  beforeAll(async () => {
    simulator = await startVonageSimulator();
    settings = {
      application_id: simulator.applicationId,
      private_key: simulator.privateKey,
      signature_secret: simulator.signatureSecret,
      from: "447700900000",
    };
  });
  afterAll(() => simulator.close());
  beforeEach(() => simulator.reset());

  const message = (overrides: Partial<OutboundMessage> = {}, channelSettings = settings): OutboundMessage => ({
    id: "msg_01J9ZXQ4T7ZK8H3V5N2M6P0R1S",
    type: "text",
    text: "Your table is ready",
    attachment: null,
    contact: { name: "Ada", email: null, phone: "+44 7700 900001", externalId: null },
    recipient: "+44 7700 900001",
    channel: { id: "chn_01", type: "sms", settings: channelSettings },
    conversation: { id: "conv_01", subject: null, threadIds: [] },
    lastInboundAt: null,
    attempt: 1,
    ...overrides,
  });

  const adapter = () => vonageSmsAdapter(simulator.options(), settings);

  it("sends the text to the recipient's digits from the channel's sender, Parley's id as client_ref", async () => {
    const result = await adapter().send(message());

    expect(result).toEqual({
      outcome: "sent",
      providerMessageId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      receipts: [],
    });
    expect(simulator.requests).toHaveLength(1);
    expect(simulator.requests[0]?.body).toEqual({
      message_type: "text",
      channel: "sms",
      to: "447700900001",
      from: "447700900000",
      text: "Your table is ready",
      client_ref: "msg_01J9ZXQ4T7ZK8H3V5N2M6P0R1S",
    });
    expect(simulator.requests[0]?.claims?.application_id).toBe(simulator.applicationId);
  });

  it("sends from an alphanumeric sender id as it is", async () => {
    const named = { ...settings, from: "Parley" };
    await vonageSmsAdapter(simulator.options(), named).send(message({}, named));
    expect(simulator.requests[0]?.body).toMatchObject({ from: "Parley" });
  });

  it("fails with unauthorized, a credential refusal, when Vonage answers 401: the channel then needs attention", async () => {
    const stranger = await generateVonageKeyPair();
    const wrongKey = { ...settings, private_key: stranger.privateKey };

    const result = await adapter().send(message({}, wrongKey));

    expect(result).toEqual({
      outcome: "failed",
      error: {
        code: "unauthorized",
        message: expect.stringContaining("Vonage refused the application's credentials (HTTP 401)"),
      },
    });
    if (result.outcome !== "failed") throw new Error("expected a failure");
    expect(isVonageCredentialRefusal(result.error)).toBe(true);
    expect(result.error.message).not.toContain(stranger.privateKey.split("\n")[1]);
  });

  it("fails with Vonage's code and words untranslated when it refuses the message (422)", async () => {
    simulator.failNext(1, vonageErrors.illegalSender());

    const result = await adapter().send(message());

    expect(result).toEqual({
      outcome: "failed",
      error: {
        code: "1120",
        message:
          "Illegal Sender Address - rejected: Due to local regulations, the SenderID you set in from in the request was not accepted.",
      },
    });
    if (result.outcome === "failed") expect(isVonageCredentialRefusal(result.error)).toBe(false);
  });

  it.each([
    ["429", vonageErrors.throttled()],
    ["500", vonageErrors.internal()],
  ])("throws TemporaryChannelError on a %s, for the job to retry", async (_status, failure) => {
    simulator.failNext(1, failure);
    await expect(adapter().send(message())).rejects.toBeInstanceOf(TemporaryChannelError);
  });

  it("fails without calling Vonage when the contact has no number, or none that is international", async () => {
    expect(await adapter().send(message({ recipient: null }))).toMatchObject({
      outcome: "failed",
      error: { code: "recipient_unknown" },
    });
    expect(await adapter().send(message({ recipient: "call me maybe" }))).toMatchObject({
      outcome: "failed",
      error: { code: "recipient_invalid" },
    });
    expect(simulator.requests).toHaveLength(0);
  });

  it("fails without calling Vonage for anything but text, an empty text or one over 1000 characters", async () => {
    const attachment = {
      url: "https://api.example/v1/attachments/att_1/content",
      publicUrl: "https://api.example/f/att_1?sig=x",
      contentType: "image/png",
      filename: "a.png",
      size: 3,
      read: async () => Buffer.from("png"),
    };
    expect(await adapter().send(message({ type: "image", attachment }))).toMatchObject({
      outcome: "failed",
      error: { code: "unsupported_message_type" },
    });
    expect(await adapter().send(message({ text: "" }))).toMatchObject({
      outcome: "failed",
      error: { code: "text_missing" },
    });
    expect(await adapter().send(message({ text: "x".repeat(1001) }))).toMatchObject({
      outcome: "failed",
      error: { code: "text_too_long" },
    });
    expect(simulator.requests).toHaveLength(0);
  });

  it("fails as channel_misconfigured, naming the setting but not its value, when the settings are wrong", async () => {
    const broken = { ...settings, application_id: "nope", signature_secret: "" };

    const result = await adapter().send(message({}, broken));

    expect(result).toMatchObject({ outcome: "failed", error: { code: "channel_misconfigured" } });
    if (result.outcome !== "failed") throw new Error("expected a failure");
    expect(result.error.message).toContain("application_id");
    expect(result.error.message).toContain("signature_secret");
    expect(result.error.message).not.toContain(String(settings.private_key).split("\n")[1]);
    expect(simulator.requests).toHaveLength(0);
  });

  it("paces a channel as its settings say", () => {
    expect(vonageSmsAdapter(simulator.options(), settings).messagesPerSecond).toBe(30);
    expect(vonageSmsAdapter(simulator.options(), { ...settings, from: "+1 415 555 0101" }).messagesPerSecond).toBe(1);
    expect(vonageSmsAdapter(simulator.options(), { ...settings, mps: "5" }).messagesPerSecond).toBe(5);
    expect(vonageSmsAdapter(simulator.options()).messagesPerSecond).toBe(1);
  });
});
