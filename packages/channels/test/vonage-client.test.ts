import { createPublicKey, verify } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { TemporaryChannelError } from "../src/adapter.js";
import { CredentialCheckError } from "../src/credentials.js";
import { createVonageClient, vonageUrl } from "../src/sms/vonage/client.js";
import { checkVonageCredentials } from "../src/sms/vonage/credential-check.js";
import { VonageApiError, VonageAuthError, vonageFailure } from "../src/sms/vonage/errors.js";
import { signApplicationJwt, VONAGE_JWT_TTL_SECONDS } from "../src/sms/vonage/jwt.js";
import {
  generateVonageKeyPair,
  startVonageSimulator,
  type VonageSimulator,
  vonageErrors,
  vonageProblem,
} from "../testing/vonage-simulator.js";

const SMS = { to: "447700900001", from: "447700900000", text: "Your order shipped", clientRef: "msg_01J9ZX" };

/** Splits and checks a JWT with node:crypto: what Vonage does with the application's public key. */
function decodeVerified(token: string, publicKeyPem: string) {
  const [header, payload, signature] = token.split(".");
  if (!header || !payload || !signature) throw new Error("not a JWT");
  const valid = verify(
    "RSA-SHA256",
    Buffer.from(`${header}.${payload}`),
    createPublicKey(publicKeyPem),
    Buffer.from(signature, "base64url"),
  );
  return {
    valid,
    header: JSON.parse(Buffer.from(header, "base64url").toString()) as Record<string, unknown>,
    claims: JSON.parse(Buffer.from(payload, "base64url").toString()) as Record<string, unknown>,
  };
}

describe("signApplicationJwt", () => {
  it("signs RS256 with the private key: application_id, iat, a fresh jti and a 15-minute exp", async () => {
    const keys = await generateVonageKeyPair();
    const applicationId = "aaaaaaaa-bbbb-cccc-dddd-0123456789ab";
    const now = new Date("2025-06-01T12:00:00Z");

    const first = decodeVerified(
      await signApplicationJwt({ applicationId, privateKey: keys.privateKey, now }),
      keys.publicKey,
    );
    const second = decodeVerified(
      await signApplicationJwt({ applicationId, privateKey: keys.privateKey, now }),
      keys.publicKey,
    );

    expect(first.valid).toBe(true);
    expect(first.header).toEqual({ alg: "RS256", typ: "JWT" });
    expect(first.claims).toEqual({
      application_id: applicationId,
      iat: now.getTime() / 1000,
      jti: expect.stringMatching(/^[0-9a-f-]{36}$/),
      exp: now.getTime() / 1000 + VONAGE_JWT_TTL_SECONDS,
    });
    expect(VONAGE_JWT_TTL_SECONDS).toBe(900);
    expect(second.claims.jti).not.toBe(first.claims.jti);
  });

  it("does not verify with another application's public key", async () => {
    const [ours, theirs] = await Promise.all([generateVonageKeyPair(), generateVonageKeyPair()]);
    const token = await signApplicationJwt({ applicationId: "a", privateKey: ours.privateKey });
    expect(decodeVerified(token, theirs.publicKey).valid).toBe(false);
  });
});

describe("createVonageClient.sendSms", () => {
  let simulator: VonageSimulator;
  let privateKey: string;
  beforeAll(async () => {
    simulator = await startVonageSimulator();
    privateKey = simulator.privateKey ?? "";
  });
  afterAll(() => simulator.close());
  beforeEach(() => simulator.reset());

  const client = (overrides: { privateKey?: string; timeoutMs?: number } = {}) =>
    createVonageClient(simulator.options(overrides.timeoutMs ? { timeoutMs: overrides.timeoutMs } : {}), {
      applicationId: simulator.applicationId,
      privateKey: overrides.privateKey ?? privateKey,
    });

  it("POSTs /v1/messages with Vonage's SMS shape and returns the message_uuid of the 202", async () => {
    const uuid = await client().sendSms({ ...SMS, to: "+447700900001" });

    expect(uuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(simulator.requests).toHaveLength(1);
    const [request] = simulator.requests;
    expect(request?.method).toBe("POST");
    expect(request?.path).toBe("/v1/messages");
    expect(request?.headers["content-type"]).toBe("application/json");
    expect(request?.body).toEqual({
      message_type: "text",
      channel: "sms",
      to: "447700900001",
      from: "447700900000",
      text: "Your order shipped",
      client_ref: "msg_01J9ZX",
    });
  });

  it("authenticates with a Bearer JWT that the application's public key verifies, naming the application", async () => {
    await client().sendSms(SMS);

    const authorization = simulator.requests[0]?.headers.authorization ?? "";
    expect(authorization).toMatch(/^Bearer /);
    const { valid, claims } = decodeVerified(authorization.slice("Bearer ".length), simulator.publicKey);
    expect(valid).toBe(true);
    expect(claims.application_id).toBe(simulator.applicationId);
    expect(simulator.requests[0]?.claims).toMatchObject({ application_id: simulator.applicationId });
  });

  it("signs each request anew", async () => {
    await client().sendSms(SMS);
    await client().sendSms(SMS);
    const [first, second] = simulator.requests.map((request) => request.claims?.jti);
    expect(first).toBeTypeOf("string");
    expect(second).not.toBe(first);
  });

  it("throws VonageAuthError (code unauthorized) when Vonage answers 401 to a key that is not the application's", async () => {
    const stranger = await generateVonageKeyPair();

    const error = await client({ privateKey: stranger.privateKey })
      .sendSms(SMS)
      .catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(VonageAuthError);
    expect(error).toMatchObject({ code: "unauthorized", status: 401 });
    expect((error as Error).message).toContain("You did not provide correct credentials.");
    expect(simulator.requests[0]?.claims).toBeNull();
  });

  it("throws VonageApiError with Vonage's code untranslated for a 422", async () => {
    simulator.failNext(1, vonageErrors.illegalSender());

    const error = await client()
      .sendSms(SMS)
      .catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(VonageApiError);
    expect(error).not.toBeInstanceOf(VonageAuthError);
    expect(error).toMatchObject({
      code: "1120",
      status: 422,
      message:
        "Illegal Sender Address - rejected: Due to local regulations, the SenderID you set in from in the request was not accepted.",
    });
  });

  it("refuses a malformed send as the simulator's 422 Invalid params", async () => {
    await expect(client().sendSms({ ...SMS, to: "0770" })).rejects.toMatchObject({ code: "1020", status: 422 });
  });

  it.each([
    ["429 Throttled", vonageErrors.throttled()],
    ["500 Internal error", vonageErrors.internal()],
    ["502 from a gateway", { status: 502, body: "<html>Bad Gateway</html>" }],
    ["503 without a body", { status: 503, body: "" }],
  ])("throws TemporaryChannelError for %s", async (_case, failure) => {
    simulator.failNext(1, failure);
    await expect(client().sendSms(SMS)).rejects.toBeInstanceOf(TemporaryChannelError);
  });

  it("throws TemporaryChannelError when Vonage does not answer in time", async () => {
    simulator.failNext(1, { hang: true });
    await expect(client({ timeoutMs: 200 }).sendSms(SMS)).rejects.toThrow(
      new TemporaryChannelError("Vonage did not answer within 200 ms"),
    );
  });

  it("throws TemporaryChannelError when Vonage cannot be reached", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));

    const unreachable = createVonageClient(
      { baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 2_000 },
      { applicationId: simulator.applicationId, privateKey },
    );

    await expect(unreachable.sendSms(SMS)).rejects.toThrow(/Vonage could not be reached: ECONNREFUSED/);
  });

  it("fails without retry when a 2xx carries no message_uuid: the message may be out", async () => {
    simulator.failNext(1, { status: 202, body: {} });
    await expect(client().sendSms(SMS)).rejects.toMatchObject({ code: "unexpected_response" });
  });
});

describe("vonageFailure", () => {
  it.each([
    [{ type: "https://developer.vonage.com/api-errors/messages#1050", title: "Number barred" }, "1050"],
    [{ type: "https://developer.nexmo.com/api-errors/#forbidden", title: "Forbidden" }, "forbidden"],
    [{ title: "Invalid sender", detail: "The from number is not yours" }, "Invalid sender"],
    [{ type: "https://developer.vonage.com/api-errors/messages/invalid-recipient" }, "invalid-recipient"],
  ])("takes the code from the fragment of type, else the title, else the type's last segment", (body, code) => {
    expect(vonageFailure(403, body).code).toBe(code);
  });

  it("names the HTTP status when the answer is not a problem", () => {
    expect(vonageFailure(403, "<html>Forbidden</html>").toProviderError()).toEqual({
      code: "http_403",
      message: "Vonage answered HTTP 403",
    });
  });

  it("treats Throttled (1000) as temporary even without a 429", () => {
    expect(() => vonageFailure(400, vonageProblem(400, "1000", "Throttled", "Please wait and retry").body)).toThrow(
      TemporaryChannelError,
    );
  });

  it("makes every 401 an auth error with code unauthorized, whatever Vonage spells", () => {
    const error = vonageFailure(401, { type: "https://developer.nexmo.com/api-errors/#unathorized", title: "Nope" });
    expect(error).toBeInstanceOf(VonageAuthError);
    expect(error.code).toBe("unauthorized");
  });
});

describe("vonageUrl", () => {
  it.each([["https://api.nexmo.com"], ["https://api.nexmo.com/"]])("joins %s and the path", (baseUrl) => {
    expect(vonageUrl({ baseUrl, timeoutMs: 1 }, "/v1/messages")).toBe("https://api.nexmo.com/v1/messages");
  });
});

describe("checkVonageCredentials", () => {
  it("resolves when the key signs a token its own public key verifies", async () => {
    const keys = await generateVonageKeyPair();
    await expect(
      checkVonageCredentials({
        application_id: "aaaaaaaa-bbbb-cccc-dddd-0123456789ab",
        private_key: keys.privateKey.replaceAll("\n", "\\n"),
        signature_secret: "secret",
        from: "447700900000",
      }),
    ).resolves.toBeUndefined();
  });

  it("names the wrong settings and never quotes a secret", async () => {
    const error = await checkVonageCredentials({
      application_id: "not-a-uuid",
      private_key: "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END PRIVATE KEY-----",
      signature_secret: "s3cr3t-value",
      from: "447700900000",
    }).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(CredentialCheckError);
    const message = (error as Error).message;
    expect(message).toContain("application_id: must be the Vonage application's id");
    expect(message).toContain("private_key: is not a readable private key");
    expect(message).not.toContain("c2VjcmV0LWtleS1ieXRlcw");
    expect(message).not.toContain("s3cr3t-value");
  });
});
