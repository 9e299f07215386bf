import { describe, expect, it } from "vitest";
import { computeSignature, verifyWebhook, WebhookVerificationError } from "./index.js";

const secret = "whsec_0123456789abcdefghijklmnopqrstuv";
const body = JSON.stringify({ id: "evt_01", type: "contact.created", data: {} });
const now = 1_800_000_000;

function header(timestamp: number, ...signatures: string[]) {
  return [`t=${timestamp}`, ...signatures.map((signature) => `v1=${signature}`)].join(",");
}

describe("verifyWebhook", () => {
  it("accepts the HMAC-SHA-256 of '<t>.<raw body>' and returns the event", () => {
    const signature = computeSignature(secret, now, body);
    expect(verifyWebhook(body, header(now, signature), secret, { now })).toEqual(JSON.parse(body));
  });

  it("accepts when any of several v1 signatures matches (secret rotation)", () => {
    const signature = computeSignature(secret, now, body);
    expect(() => verifyWebhook(body, header(now, "00".repeat(32), signature), secret, { now })).not.toThrow();
  });

  it("refuses a changed body, a wrong secret, a missing or malformed header and an old timestamp", () => {
    const signature = computeSignature(secret, now, body);
    expect(() => verifyWebhook(`${body} `, header(now, signature), secret, { now })).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook(body, header(now, signature), `${secret}x`, { now })).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook(body, undefined, secret, { now })).toThrow(/Missing/);
    expect(() => verifyWebhook(body, "v1=abc", secret, { now })).toThrow(/Malformed/);
    expect(() =>
      verifyWebhook(body, header(now - 301, computeSignature(secret, now - 301, body)), secret, { now }),
    ).toThrow(/tolerance/);
  });
});
