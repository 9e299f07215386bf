import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  type MetaOptions,
  type OutboundAttachment,
  type OutboundMessage,
  TemporaryChannelError,
} from "../src/adapter.js";
import { instagramSandbox } from "../src/instagram/sandbox.js";
import { instagramAdapter } from "../src/instagram/send-adapter.js";
import { messengerSandbox } from "../src/messenger/sandbox.js";
import { messengerAdapter } from "../src/messenger/send-adapter.js";
import { messengerSessionWindow, whatsappSessionWindow } from "../src/meta/session-window.js";
import { whatsappCloudAdapter } from "../src/whatsapp/cloud-adapter.js";
import { whatsappSandbox } from "../src/whatsapp/sandbox.js";
import { type MetaSimulator, metaError, metaErrors, startMetaSimulator } from "../testing/meta-simulator.js";

const PHONE_NUMBER_ID = "106540352242922";
const PAGE_ID = "110200000000001";
const IG_ACCOUNT_ID = "17841400000000001";
const HOUR_MS = 3_600_000;
const OUTSIDE_WINDOW = { code: "10", message: "(#10) This message is sent outside of allowed window." };
const REENGAGEMENT = {
  code: "131047",
  message: "Re-engagement message: more than 24 hours have passed since the customer last replied",
};

let simulator: MetaSimulator;
let meta: MetaOptions;

beforeAll(async () => {
  simulator = await startMetaSimulator();
  meta = simulator.options();
});
afterAll(() => simulator.close());
beforeEach(() => simulator.reset());

function attachment(contentType: string, filename: string): OutboundAttachment {
  return {
    url: "https://api.parley.test/v1/attachments/att_01/content",
    publicUrl: `https://api.parley.test/v1/files/att_01?expires=1751371200&signature=abc123`,
    contentType,
    filename,
    size: 1234,
    read: async () => Buffer.from("file"),
  };
}

function settingsOf(type: OutboundMessage["channel"]["type"]): Record<string, unknown> {
  const secrets = { access_token: simulator.accessToken, app_secret: "app-secret", verify_token: "verify-me" };
  if (type === "whatsapp") return { phone_number_id: PHONE_NUMBER_ID, ...secrets };
  if (type === "messenger") return { page_id: PAGE_ID, ...secrets };
  return { instagram_account_id: IG_ACCOUNT_ID, ...secrets };
}

/** A message whose contact wrote a minute ago: the session window is open. */
function outbound(type: OutboundMessage["channel"]["type"], overrides: Partial<OutboundMessage> = {}): OutboundMessage {
  return {
    id: "msg_01JZ0000000000000000000001",
    type: "text",
    text: "Your order has shipped",
    attachment: null,
    contact: { name: "Ada", email: null, phone: "+16505551234", externalId: null },
    recipient: type === "whatsapp" ? "16505551234" : "3159315540852734",
    channel: { id: "ch_01", type, settings: settingsOf(type) },
    conversation: { id: "conv_01", subject: null, threadIds: [] },
    lastInboundAt: new Date(Date.now() - 60_000),
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

/** A port nothing listens on: the connection is refused. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("whatsappCloudAdapter", () => {
  const adapter = () => whatsappCloudAdapter(meta);

  it("POSTs a text to /{version}/{phone_number_id}/messages and returns the wamid, with no receipts", async () => {
    const result = await adapter().send(outbound("whatsapp"));

    const request = onlyRequest();
    expect(request.method).toBe("POST");
    expect(request.path).toBe(`/v23.0/${PHONE_NUMBER_ID}/messages`);
    expect(request.headers.authorization).toBe(`Bearer ${simulator.accessToken}`);
    expect(request.headers["content-type"]).toBe("application/json");
    expect(request.body).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: "16505551234",
      type: "text",
      text: { body: "Your order has shipped", preview_url: false },
      biz_opaque_callback_data: "msg_01JZ0000000000000000000001",
    });
    expect(result).toEqual({
      outcome: "sent",
      providerMessageId: expect.stringMatching(/^wamid\.[A-Za-z0-9+/=]+$/),
      receipts: [],
    });
  });

  it("never puts the access token in the URL", async () => {
    await adapter().send(outbound("whatsapp"));
    expect(onlyRequest().path).not.toContain(simulator.accessToken);
  });

  it.each([
    ["image", "image/jpeg", "photo.jpg", "Here it is", { caption: "Here it is" }],
    ["video", "video/mp4", "clip.mp4", "Watch", { caption: "Watch" }],
    ["audio", "audio/ogg", "voice.ogg", null, {}],
    [
      "document",
      "application/pdf",
      "invoice.pdf",
      "Your invoice",
      { caption: "Your invoice", filename: "invoice.pdf" },
    ],
  ] as const)("sends %s by link to the public URL", async (type, contentType, filename, text, extra) => {
    const result = await adapter().send(
      outbound("whatsapp", { type, text, attachment: attachment(contentType, filename) }),
    );

    expect(onlyRequest().body).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: "16505551234",
      type,
      [type]: { link: "https://api.parley.test/v1/files/att_01?expires=1751371200&signature=abc123", ...extra },
      biz_opaque_callback_data: "msg_01JZ0000000000000000000001",
    });
    expect(result.outcome).toBe("sent");
  });

  it("sends no caption on audio, even when the message has a text", async () => {
    await adapter().send(
      outbound("whatsapp", { type: "audio", text: "ignored", attachment: attachment("audio/ogg", "a.ogg") }),
    );
    expect((onlyRequest().body as { audio: unknown }).audio).toEqual({
      link: "https://api.parley.test/v1/files/att_01?expires=1751371200&signature=abc123",
    });
  });

  it.each([
    ["never wrote", null],
    ["wrote 24 hours and a minute ago", new Date(Date.now() - 24 * HOUR_MS - 60_000)],
  ])("fails with 131047 when the contact %s, without calling Meta", async (_case, lastInboundAt) => {
    const result = await adapter().send(outbound("whatsapp", { lastInboundAt }));
    expect(result).toEqual({ outcome: "failed", error: REENGAGEMENT });
    expect(simulator.requests).toEqual([]);
  });

  it("sends 23 hours after the contact's last message", async () => {
    const result = await adapter().send(outbound("whatsapp", { lastInboundAt: new Date(Date.now() - 23 * HOUR_MS) }));
    expect(result.outcome).toBe("sent");
  });

  it("fails with recipient_unknown when the contact has no WhatsApp address, without calling Meta", async () => {
    const result = await adapter().send(outbound("whatsapp", { recipient: null }));
    expect(result).toEqual({
      outcome: "failed",
      error: { code: "recipient_unknown", message: expect.stringContaining("WhatsApp") },
    });
    expect(simulator.requests).toEqual([]);
  });

  it("fails with channel_misconfigured naming the bad setting, never showing a secret", async () => {
    const settings = {
      phone_number_id: "+1 650 555",
      access_token: "EAAsecret-token",
      app_secret: "s",
      verify_token: "v",
    };
    const result = await adapter().send(outbound("whatsapp", { channel: { id: "ch_01", type: "whatsapp", settings } }));

    expect(result).toEqual({
      outcome: "failed",
      error: { code: "channel_misconfigured", message: expect.stringContaining("phone_number_id") },
    });
    expect(JSON.stringify(result)).not.toContain("EAAsecret-token");
    expect(simulator.requests).toEqual([]);
  });

  it.each([
    ["undeliverable", metaErrors.undeliverable(), { code: "131026", message: "(#131026) Message Undeliverable." }],
    ["invalid parameter", metaErrors.invalidParameter(), { code: "100", message: "(#100) Invalid parameter" }],
    [
      "an expired access token",
      metaErrors.tokenExpired(),
      { code: "190", message: expect.stringContaining("Error validating access token") },
    ],
    [
      "131000 with a 400",
      metaErrors.somethingWentWrong(400),
      { code: "131000", message: "(#131000) Something went wrong" },
    ],
    [
      "a 404 without a Graph body",
      { status: 404, body: "<html>Not Found</html>" },
      { code: "http_404", message: "Meta answered HTTP 404" },
    ],
  ])("fails the message on %s with Meta's code and message, untranslated", async (_case, failure, error) => {
    simulator.failNext(1, failure);
    const result = await adapter().send(outbound("whatsapp"));
    expect(result).toEqual({ outcome: "failed", error });
    expect(simulator.requests).toHaveLength(1);
  });

  it.each([
    ["a rate limit with HTTP 429", metaErrors.rateLimit(429), /Rate limit hit \(code 130429\)/],
    ["a rate limit with HTTP 400", metaErrors.rateLimit(400), /Rate limit hit \(code 130429\)/],
    ["service unavailable (503)", metaErrors.serviceUnavailable(), /Service unavailable/],
    ["an unexpected error (500)", metaErrors.unexpected(), /unexpected error/],
    ["131000 with a 500", metaErrors.somethingWentWrong(500), /Something went wrong/],
    ["a 502 page from a gateway", { status: 502, body: "<html>Bad Gateway</html>" }, /HTTP 502/],
    ["the pair rate limit", metaError(131056, "(#131056) Pair rate limit hit"), /131056/],
    ["a code Graph marks transient", metaError(9999, "Try again", { transient: true }), /Try again/],
  ])("throws a TemporaryChannelError on %s, to be retried", async (_case, failure, message) => {
    simulator.failNext(1, failure);
    const sending = adapter().send(outbound("whatsapp"));
    await expect(sending).rejects.toBeInstanceOf(TemporaryChannelError);
    await expect(sending).rejects.toThrow(message);
  });

  it("throws a TemporaryChannelError when Meta does not answer in time", async () => {
    simulator.failNext(1, { hang: true });
    const sending = whatsappCloudAdapter(simulator.options({ timeoutMs: 200 })).send(outbound("whatsapp"));
    await expect(sending).rejects.toBeInstanceOf(TemporaryChannelError);
    await expect(sending).rejects.toThrow("Meta did not answer within 200 ms");
  });

  it("throws a TemporaryChannelError when Meta cannot be reached", async () => {
    const port = await closedPort();
    const sending = whatsappCloudAdapter({ ...meta, graphBaseUrl: `http://127.0.0.1:${port}` }).send(
      outbound("whatsapp"),
    );
    await expect(sending).rejects.toBeInstanceOf(TemporaryChannelError);
    await expect(sending).rejects.toThrow(/ECONNREFUSED/);
  });

  it("fails with unexpected_response when Meta accepts without a message id", async () => {
    simulator.failNext(1, { status: 200, body: { messaging_product: "whatsapp", messages: [] } });
    const result = await adapter().send(outbound("whatsapp"));
    expect(result).toEqual({ outcome: "failed", error: { code: "unexpected_response", message: expect.any(String) } });
  });
});

describe("messengerAdapter", () => {
  const adapter = () => messengerAdapter(meta);

  it("POSTs a RESPONSE text to /{version}/{page_id}/messages and returns the mid", async () => {
    const result = await adapter().send(outbound("messenger"));

    const request = onlyRequest();
    expect(request.method).toBe("POST");
    expect(request.path).toBe(`/v23.0/${PAGE_ID}/messages`);
    expect(request.headers.authorization).toBe(`Bearer ${simulator.accessToken}`);
    expect(request.body).toEqual({
      recipient: { id: "3159315540852734" },
      messaging_type: "RESPONSE",
      message: { text: "Your order has shipped" },
    });
    expect(result).toEqual({ outcome: "sent", providerMessageId: expect.stringMatching(/^m_[\w-]+$/), receipts: [] });
  });

  it.each([
    ["image", "image/png", "image"],
    ["video", "video/mp4", "video"],
    ["audio", "audio/mpeg", "audio"],
    ["document", "application/pdf", "file"],
  ] as const)(
    "sends %s as a %s attachment by URL, not reusable, without the caption",
    async (type, contentType, as) => {
      const result = await adapter().send(
        outbound("messenger", { type, text: "A caption", attachment: attachment(contentType, "f") }),
      );

      expect(onlyRequest().body).toEqual({
        recipient: { id: "3159315540852734" },
        messaging_type: "RESPONSE",
        message: {
          attachment: {
            type: as,
            payload: {
              url: "https://api.parley.test/v1/files/att_01?expires=1751371200&signature=abc123",
              is_reusable: false,
            },
          },
        },
      });
      expect(result.outcome).toBe("sent");
    },
  );

  it.each([
    ["never wrote", null],
    ["wrote 25 hours ago", new Date(Date.now() - 25 * HOUR_MS)],
  ])("fails with code 10 when the person %s, without calling Meta", async (_case, lastInboundAt) => {
    const result = await adapter().send(outbound("messenger", { lastInboundAt }));
    expect(result).toEqual({ outcome: "failed", error: OUTSIDE_WINDOW });
    expect(simulator.requests).toEqual([]);
  });

  it("keeps Meta's own window refusal as it came", async () => {
    simulator.failNext(1, metaErrors.outsideWindow());
    const result = await adapter().send(outbound("messenger"));
    expect(result).toEqual({
      outcome: "failed",
      error: {
        code: "10",
        message: expect.stringMatching(/^\(#10\) This message is sent outside of allowed window\./),
      },
    });
  });

  it("throws a TemporaryChannelError on Messenger's rate limit (613)", async () => {
    simulator.failNext(1, metaError(613, "Calls to this api have exceeded the rate limit."));
    await expect(adapter().send(outbound("messenger"))).rejects.toBeInstanceOf(TemporaryChannelError);
  });

  it("fails with channel_misconfigured without a page id", async () => {
    const settings = { access_token: "t", app_secret: "s", verify_token: "v" };
    const result = await adapter().send(outbound("messenger", { channel: { id: "ch", type: "messenger", settings } }));
    expect(result).toMatchObject({
      outcome: "failed",
      error: { code: "channel_misconfigured", message: expect.stringContaining("page_id") },
    });
    expect(simulator.requests).toEqual([]);
  });
});

describe("instagramAdapter", () => {
  const adapter = () => instagramAdapter(meta);

  it("POSTs a text to /{version}/me/messages as the linked Page, without messaging_type", async () => {
    const result = await adapter().send(outbound("instagram"));

    const request = onlyRequest();
    expect(request.path).toBe("/v23.0/me/messages");
    expect(request.headers.authorization).toBe(`Bearer ${simulator.accessToken}`);
    expect(request.body).toEqual({
      recipient: { id: "3159315540852734" },
      message: { text: "Your order has shipped" },
    });
    expect(result).toEqual({ outcome: "sent", providerMessageId: expect.any(String), receipts: [] });
  });

  it("sends an image as an attachment by URL", async () => {
    await adapter().send(
      outbound("instagram", { type: "image", text: null, attachment: attachment("image/jpeg", "p.jpg") }),
    );
    expect(onlyRequest().body).toEqual({
      recipient: { id: "3159315540852734" },
      message: {
        attachment: {
          type: "image",
          payload: {
            url: "https://api.parley.test/v1/files/att_01?expires=1751371200&signature=abc123",
            is_reusable: false,
          },
        },
      },
    });
  });

  it("refuses a document, which Instagram cannot carry, without calling Meta", async () => {
    const result = await adapter().send(
      outbound("instagram", { type: "document", attachment: attachment("application/pdf", "x.pdf") }),
    );
    expect(result).toMatchObject({ outcome: "failed", error: { code: "unsupported_message_type" } });
    expect(simulator.requests).toEqual([]);
  });

  it("fails with code 10 outside the 24-hour window, without calling Meta", async () => {
    const result = await adapter().send(outbound("instagram", { lastInboundAt: null }));
    expect(result).toEqual({ outcome: "failed", error: OUTSIDE_WINDOW });
    expect(simulator.requests).toEqual([]);
  });
});

describe("the session window rule", () => {
  const now = new Date("2025-07-01T12:00:00Z");
  const at = (ms: number) => outbound("messenger", { lastInboundAt: new Date(now.getTime() - ms) });

  it("is open up to exactly 24 hours after the contact's last message, and closed a millisecond later", () => {
    expect(messengerSessionWindow(at(24 * HOUR_MS), now)).toBeUndefined();
    expect(messengerSessionWindow(at(24 * HOUR_MS + 1), now)).toEqual({ outcome: "failed", error: OUTSIDE_WINDOW });
    expect(whatsappSessionWindow(at(24 * HOUR_MS + 1), now)).toEqual({ outcome: "failed", error: REENGAGEMENT });
  });
});

describe("sandbox windows: the sandbox fails where live fails (issue 23, item 1)", () => {
  const delays = { deliveryDelayMs: 50, readDelayMs: 50 };

  it.each([
    ["WhatsApp", () => whatsappSandbox(delays), () => whatsappCloudAdapter(meta), "whatsapp", REENGAGEMENT],
    ["Messenger", () => messengerSandbox(delays), () => messengerAdapter(meta), "messenger", OUTSIDE_WINDOW],
    ["Instagram", () => instagramSandbox(delays), () => instagramAdapter(meta), "instagram", OUTSIDE_WINDOW],
  ] as const)(
    "%s: outside the window the sandbox refuses with the live adapter's code; inside it sends",
    async (_name, sandbox, live, type, refusal) => {
      for (const lastInboundAt of [null, new Date(Date.now() - 24 * HOUR_MS - 60_000)]) {
        const fromSandbox = await sandbox().send(outbound(type, { lastInboundAt }));
        const fromLive = await live().send(outbound(type, { lastInboundAt }));
        expect(fromSandbox).toEqual({ outcome: "failed", error: refusal });
        expect(fromSandbox).toEqual(fromLive);
      }
      expect(await sandbox().send(outbound(type))).toMatchObject({ outcome: "sent" });
    },
  );
});
