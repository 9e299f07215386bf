import { createServer } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { TemporaryChannelError } from "../src/adapter.js";
import { CredentialCheckError } from "../src/credentials.js";
import { checkTwilioCredentials } from "../src/sms/twilio/check.js";
import { createTwilioClient, isTwilioApiHost } from "../src/sms/twilio/client.js";
import { TwilioApiError, TwilioAuthError } from "../src/sms/twilio/errors.js";
import { type TwilioSmsSettings, twilioSmsSettings } from "../src/sms/twilio/settings.js";
import { startTwilioSimulator, type TwilioSimulator, twilioError, twilioErrors } from "../testing/twilio-simulator.js";

let simulator: TwilioSimulator;

beforeAll(async () => {
  simulator = await startTwilioSimulator();
});
afterAll(() => simulator.close());
beforeEach(() => simulator.reset());

function settings(overrides: Record<string, unknown> = {}): TwilioSmsSettings {
  return twilioSmsSettings.parse({
    account_sid: simulator.accountSid,
    auth_token: simulator.authToken,
    from: "+14155550100",
    ...overrides,
  });
}

function client(overrides: Record<string, unknown> = {}, timeoutMs?: number) {
  return createTwilioClient(simulator.options(timeoutMs ? { timeoutMs } : {}), settings(overrides));
}

function basic(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`;
}

function onlyRequest() {
  expect(simulator.requests).toHaveLength(1);
  const [request] = simulator.requests;
  if (!request) throw new Error("no request");
  return request;
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe("sendMessage", () => {
  it("POSTs the form to the account's Messages.json with the account's Basic credentials", async () => {
    const sent = await client().sendMessage({
      to: "+16505551234",
      body: "Your order has shipped",
      statusCallback: "https://api.parley.example/v1/channels/webhooks/twilio",
    });

    expect(sent.sid).toMatch(/^SM[0-9a-f]{32}$/);
    expect(sent.status).toBe("queued");
    const request = onlyRequest();
    expect(request.method).toBe("POST");
    expect(request.path).toBe(`/2010-04-01/Accounts/${simulator.accountSid}/Messages.json`);
    expect(request.headers.authorization).toBe(basic(simulator.accountSid, simulator.authToken));
    expect(request.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(request.fields).toEqual([
      ["To", "+16505551234"],
      ["From", "+14155550100"],
      ["Body", "Your order has shipped"],
      ["StatusCallback", "https://api.parley.example/v1/channels/webhooks/twilio"],
    ]);
  });

  it("sends from a Messaging Service instead of a number", async () => {
    const service = "MG0123456789abcdef0123456789abcdef";
    const sent = await client({ from: undefined, messaging_service_sid: service }).sendMessage({
      to: "+16505551234",
      body: "Hi",
    });

    expect(sent.status).toBe("accepted");
    expect(onlyRequest().form).toEqual({ To: "+16505551234", MessagingServiceSid: service, Body: "Hi" });
  });

  it("authenticates with an API key when the channel has one", async () => {
    const key = simulator.addApiKey();
    await client({ api_key_sid: key.sid, api_key_secret: key.secret }).sendMessage({ to: "+16505551234", body: "Hi" });

    expect(onlyRequest().headers.authorization).toBe(basic(key.sid, key.secret));
  });

  it("repeats MediaUrl for each file, in order, and may leave the Body out", async () => {
    const mediaUrls = ["https://files.parley.example/a.jpg?sig=1", "https://files.parley.example/b.png?sig=2"];
    const sent = await client().sendMessage({ to: "+16505551234", body: null, mediaUrls });

    expect(sent.sid).toMatch(/^MM[0-9a-f]{32}$/);
    expect(onlyRequest().fields).toEqual([
      ["To", "+16505551234"],
      ["From", "+14155550100"],
      ["MediaUrl", mediaUrls[0]],
      ["MediaUrl", mediaUrls[1]],
    ]);
  });

  it.each([
    ["429 with code 20429", twilioErrors.tooManyRequests(), "Too Many Requests (code 20429)"],
    ["500", twilioErrors.internal(), "An internal server error has occurred (code 20500)"],
    ["503 from a proxy", { status: 503, body: "<html>Service Unavailable</html>" }, "Twilio answered HTTP 503"],
    ["400 with code 21611 (the sender's queue is full)", twilioErrors.queueFull(), "(code 21611)"],
  ])("throws a TemporaryChannelError for %s", async (_, answer, message) => {
    simulator.failNext(1, answer);
    const error = await failure(client().sendMessage({ to: "+16505551234", body: "Hi" }));

    expect(error).toBeInstanceOf(TemporaryChannelError);
    expect((error as Error).message).toContain(message);
  });

  it("throws a TemporaryChannelError when Twilio does not answer in time", async () => {
    simulator.failNext(1, { hang: true });
    const error = await failure(client({}, 200).sendMessage({ to: "+16505551234", body: "Hi" }));

    expect(error).toBeInstanceOf(TemporaryChannelError);
    expect((error as Error).message).toBe("Twilio did not answer within 200 ms");
  });

  it("throws a TemporaryChannelError when Twilio cannot be reached", async () => {
    const closed = await closedPort();
    const unreachable = createTwilioClient({ baseUrl: `http://127.0.0.1:${closed}`, timeoutMs: 2_000 }, settings());
    const error = await failure(unreachable.sendMessage({ to: "+16505551234", body: "Hi" }));

    expect(error).toBeInstanceOf(TemporaryChannelError);
    expect((error as Error).message).toBe("Twilio could not be reached: ECONNREFUSED");
  });

  it("throws a TwilioAuthError with Twilio's 20003 for refused credentials, never naming the secret", async () => {
    const wrong = "wrong-token-0123456789";
    const error = await failure(client({ auth_token: wrong }).sendMessage({ to: "+16505551234", body: "Hi" }));

    expect(error).toBeInstanceOf(TwilioAuthError);
    expect(error).toMatchObject({ code: 20003, status: 401, message: "Authenticate" });
    expect((error as TwilioAuthError).toProviderError()).toEqual({ code: "20003", message: "Authenticate" });
    expect(JSON.stringify(error)).not.toContain(wrong);
    expect(String(error)).not.toContain(wrong);
  });

  it("throws a TwilioAuthError for a 401 without Twilio's body", async () => {
    simulator.failNext(1, { status: 401, body: "<html>Unauthorized</html>" });
    const error = await failure(client().sendMessage({ to: "+16505551234", body: "Hi" }));

    expect(error).toBeInstanceOf(TwilioAuthError);
    expect((error as TwilioAuthError).toProviderError().code).toBe("http_401");
  });

  it.each([
    [21610, twilioErrors.unsubscribed(), "Attempt to send to unsubscribed recipient"],
    [21211, twilioErrors.invalidTo("+1555"), "The 'To' number +1555 is not a valid phone number."],
  ])("throws a TwilioApiError carrying Twilio's code %i and message", async (code, answer, message) => {
    simulator.failNext(1, answer);
    const error = await failure(client().sendMessage({ to: "+16505551234", body: "Hi" }));

    expect(error).toBeInstanceOf(TwilioApiError);
    expect(error).not.toBeInstanceOf(TwilioAuthError);
    expect(error).toMatchObject({ code, status: 400, message, moreInfo: `https://www.twilio.com/docs/errors/${code}` });
  });

  it("refuses a 201 without a sid rather than retrying a send Twilio may have queued", async () => {
    simulator.failNext(1, { status: 201, body: { status: "queued" } });
    const error = await failure(client().sendMessage({ to: "+16505551234", body: "Hi" }));

    expect(error).toBeInstanceOf(TwilioApiError);
    expect((error as TwilioApiError).toProviderError().code).toBe("unexpected_response");
  });
});

describe("checkAccount", () => {
  it("reads the Account resource with the Auth Token and finds it active", async () => {
    await expect(client().checkAccount()).resolves.toEqual({ accountSid: simulator.accountSid, status: "active" });
    const request = onlyRequest();
    expect(request.method).toBe("GET");
    expect(request.path).toBe(`/2010-04-01/Accounts/${simulator.accountSid}.json`);
  });

  it("refuses a suspended account", async () => {
    simulator.setAccountStatus("suspended");
    try {
      const error = await failure(client().checkAccount());
      expect(error).toBeInstanceOf(TwilioApiError);
      expect((error as TwilioApiError).toProviderError()).toEqual({
        code: "account_not_active",
        message: `The Twilio account ${simulator.accountSid} is suspended, not active`,
      });
    } finally {
      simulator.setAccountStatus("active");
    }
  });

  it("lists one message with an API key, which may not read the Account resource", async () => {
    const key = simulator.addApiKey();
    await expect(client({ api_key_sid: key.sid, api_key_secret: key.secret }).checkAccount()).resolves.toEqual({
      accountSid: simulator.accountSid,
      status: null,
    });
    expect(onlyRequest().path).toBe(`/2010-04-01/Accounts/${simulator.accountSid}/Messages.json?PageSize=1`);
  });

  it("throws a TwilioAuthError for a wrong Auth Token", async () => {
    await expect(client({ auth_token: "nope" }).checkAccount()).rejects.toBeInstanceOf(TwilioAuthError);
  });
});

describe("checkTwilioCredentials", () => {
  const options = () => simulator.options();

  it("resolves for working credentials", async () => {
    await expect(checkTwilioCredentials(options(), { ...rawSettings() })).resolves.toBeUndefined();
  });

  it("throws a CredentialCheckError with Twilio's answer and no secret", async () => {
    const secret = "not-the-token-9f8e7d";
    const error = await failure(checkTwilioCredentials(options(), { ...rawSettings(), auth_token: secret }));

    expect(error).toBeInstanceOf(CredentialCheckError);
    expect((error as Error).message).toBe(
      `Twilio refused account ${simulator.accountSid} with the Auth Token: Authenticate (code 20003)`,
    );
    expect((error as Error).message).not.toContain(secret);
  });

  it("names invalid settings without their values", async () => {
    const error = await failure(checkTwilioCredentials(options(), { ...rawSettings(), account_sid: "AC-secretish" }));

    expect(error).toBeInstanceOf(CredentialCheckError);
    expect((error as Error).message).toContain("account_sid: must be the Account SID");
    expect((error as Error).message).not.toContain("AC-secretish");
    expect(simulator.requests).toHaveLength(0);
  });

  it("reports a Twilio that cannot be reached", async () => {
    simulator.failNext(1, twilioError(20500, "An internal server error has occurred", 500));
    await expect(checkTwilioCredentials(options(), rawSettings())).rejects.toThrow(
      new CredentialCheckError("An internal server error has occurred (code 20500)"),
    );
  });

  function rawSettings(): Record<string, unknown> {
    return { provider: "twilio", account_sid: simulator.accountSid, auth_token: simulator.authToken, from: "12345" };
  }
});

describe("fetchMedia", () => {
  const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3, 4, 5, 6]);

  it("sends the credentials to Twilio's API host only, and follows its redirect to the CDN without them", async () => {
    const { url } = simulator.addMedia(jpeg, "image/jpeg");
    const download = await client().fetchMedia(url);

    expect(download).toEqual({ bytes: jpeg, contentType: "image/jpeg" });
    expect(onlyRequest().headers.authorization).toBe(basic(simulator.accountSid, simulator.authToken));
    expect(simulator.cdnRequests).toHaveLength(1);
    expect(simulator.cdnRequests[0]?.headers.authorization).toBeUndefined();
  });

  it("uses the API key for media when the channel has one", async () => {
    const key = simulator.addApiKey();
    const { url } = simulator.addMedia(jpeg, "image/jpeg");
    await client({ api_key_sid: key.sid, api_key_secret: key.secret }).fetchMedia(url);

    expect(onlyRequest().headers.authorization).toBe(basic(key.sid, key.secret));
  });

  it("never sends the credentials to another host", async () => {
    const { sid } = simulator.addMedia(jpeg, "image/jpeg");
    const download = await client().fetchMedia(`${simulator.cdnUrl}/media/${sid}`);

    expect(download.bytes).toEqual(jpeg);
    expect(simulator.requests).toHaveLength(0);
    expect(simulator.cdnRequests[0]?.headers.authorization).toBeUndefined();
  });

  it("throws a TwilioAuthError when the media needs credentials the channel does not have right", async () => {
    const { url } = simulator.addMedia(jpeg, "image/jpeg");
    await expect(client({ auth_token: "nope" }).fetchMedia(url)).rejects.toBeInstanceOf(TwilioAuthError);
    expect(simulator.cdnRequests).toHaveLength(0);
  });

  it.each([
    ["a declared length", false],
    ["a chunked body", true],
  ])("refuses a file over maxBytes by %s", async (_, chunked) => {
    const { url } = simulator.addMedia(Buffer.alloc(4096, 7), "video/mp4", { chunked });
    const error = await failure(client().fetchMedia(url, { maxBytes: 1000 }));

    expect(error).toBeInstanceOf(TwilioApiError);
    expect((error as TwilioApiError).toProviderError()).toEqual({
      code: "media_too_large",
      message: "The file is larger than 1000 bytes",
    });
  });

  it("refuses a URL that is not http(s)", async () => {
    const error = await failure(client().fetchMedia("file:///etc/passwd"));
    expect((error as TwilioApiError).toProviderError().code).toBe("media_url_invalid");
  });
});

describe("isTwilioApiHost", () => {
  const base = new URL("https://api.twilio.com");

  it.each([
    ["https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/MM1/Media/ME1", true],
    ["https://api.dublin.ie1.twilio.com/2010-04-01/Accounts/AC1/Messages/MM1/Media/ME1", true],
    ["http://api.twilio.com/x", false],
    ["https://api.twilio.com:8443/x", false],
    ["https://mms.twiliocdn.com/AC1/abc", false],
    ["https://api.twilio.com.evil.example/x", false],
    ["https://evilapi.twilio.com.example/x", false],
  ])("%s: %s", (url, expected) => {
    expect(isTwilioApiHost(new URL(url), base)).toBe(expected);
  });
});

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== "object" || address === null) throw new Error("no port");
  return address.port;
}
