import { describe, expect, it } from "vitest";
import { signMetaPayload, verifyMetaSignature } from "../src/meta/signature.js";

const SECRET = "app-secret-123";
const BODY = '{"object":"page","entry":[]}';
// Computed independently: printf '%s' "$BODY" | openssl dgst -sha256 -hmac "$SECRET"
const KNOWN = "sha256=045d425314376ceef02357beda9d40971b523021cc4baad4e55bde33d2691f03";

describe("signMetaPayload", () => {
  it("is Meta's X-Hub-Signature-256: sha256= and the hex HMAC-SHA256 of the raw body", () => {
    expect(signMetaPayload(BODY, SECRET)).toBe(KNOWN);
    expect(signMetaPayload(Buffer.from(BODY), SECRET)).toBe(KNOWN);
  });

  it("depends on the secret", () => {
    expect(signMetaPayload(BODY, "another-secret")).not.toBe(KNOWN);
  });
});

describe("verifyMetaSignature", () => {
  const raw = Buffer.from(BODY);

  it("accepts Meta's signature of exactly these bytes, in either hex case", () => {
    expect(verifyMetaSignature(raw, KNOWN, SECRET)).toBe(true);
    expect(verifyMetaSignature(raw, `sha256=${KNOWN.slice(7).toUpperCase()}`, SECRET)).toBe(true);
  });

  it("rejects a tampered body, even one that parses to the same JSON", () => {
    expect(verifyMetaSignature(Buffer.from('{"object":"page","entry":[{}]}'), KNOWN, SECRET)).toBe(false);
    expect(verifyMetaSignature(Buffer.from('{"object": "page","entry":[]}'), KNOWN, SECRET)).toBe(false);
    expect(verifyMetaSignature(Buffer.from(`${BODY}\n`), KNOWN, SECRET)).toBe(false);
  });

  it("rejects the signature made with another app secret", () => {
    expect(verifyMetaSignature(raw, signMetaPayload(raw, "wrong"), SECRET)).toBe(false);
    expect(verifyMetaSignature(raw, KNOWN, "")).toBe(false);
  });

  it.each([
    ["missing", undefined],
    ["empty", ""],
    ["without the algorithm", KNOWN.slice(7)],
    ["the old sha1 header", "sha1=0123456789abcdef0123456789abcdef01234567"],
    ["sha256= alone", "sha256="],
    ["one hex digit short", KNOWN.slice(0, -1)],
    ["one hex digit long", `${KNOWN}0`],
    ["not hex", `sha256=${"z".repeat(64)}`],
    ["two signatures", `${KNOWN},${KNOWN}`],
  ])("rejects a malformed header (%s) without throwing", (_case, header) => {
    expect(verifyMetaSignature(raw, header, SECRET)).toBe(false);
  });
});
