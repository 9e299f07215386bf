import { describe, expect, it } from "vitest";
import { computeTwilioSignature, verifyTwilioSignature } from "../src/sms/twilio/signature.js";

// Twilio's worked example ("Validating requests are coming from Twilio"): auth token 12345,
// this URL, these POST parameters. The values below are copied from Twilio-published pages:
// the helper library's validation guide (twilio-php docs/usage/validation.rst) gives
// RSOYDt4T1cUTdK1PDd93/VVr8B8= for Caller/From +14158675309; the security page's later
// revision uses +12349013030, whose signature 0/KCTR6DLpKmkAf8muzZqo1nDgQ= is quoted from it
// by public code (the search tool did not return that page's example itself). Both were
// also recomputed independently:
//   printf '%s' 'https://mycompany.com/myapp.php?foo=1&bar=2CallSidCA1234567890ABCDECaller+14158675309Digits1234From+14158675309To+18005551212' \
//     | openssl dgst -sha1 -hmac 12345 -binary | base64
const AUTH_TOKEN = "12345";
const URL_ = "https://mycompany.com/myapp.php?foo=1&bar=2";
const DOCUMENTED = [
  {
    params: {
      CallSid: "CA1234567890ABCDE",
      Caller: "+14158675309",
      Digits: "1234",
      From: "+14158675309",
      To: "+18005551212",
    },
    signature: "RSOYDt4T1cUTdK1PDd93/VVr8B8=",
  },
  {
    params: {
      CallSid: "CA1234567890ABCDE",
      Caller: "+12349013030",
      Digits: "1234",
      From: "+12349013030",
      To: "+18005551212",
    },
    signature: "0/KCTR6DLpKmkAf8muzZqo1nDgQ=",
  },
];
const [EXAMPLE] = DOCUMENTED;
if (!EXAMPLE) throw new Error("no example");

describe("computeTwilioSignature", () => {
  it.each(DOCUMENTED)("reproduces Twilio's documented example ($signature)", ({ params, signature }) => {
    expect(computeTwilioSignature(AUTH_TOKEN, URL_, params)).toBe(signature);
  });

  it("sorts the parameters by name, whatever order they came in", () => {
    const shuffled = {
      To: "+18005551212",
      Digits: "1234",
      From: "+14158675309",
      Caller: "+14158675309",
      CallSid: "CA1234567890ABCDE",
    };
    expect(computeTwilioSignature(AUTH_TOKEN, URL_, shuffled)).toBe(EXAMPLE.signature);
  });

  it("appends each distinct value of a repeated name once, values sorted, as Twilio's SDKs do", () => {
    // The SDKs' test vector (twilio-python, twilio-php): Digits=5678&Digits=1234&Digits=1234.
    const repeated = { Sid: "CA123", SidAccount: "AC123", Digits: ["5678", "1234", "1234"] };
    expect(computeTwilioSignature(AUTH_TOKEN, URL_, repeated)).toBe("IK+Dwps556ElfBT0I3Rgjkr1wJU=");
  });

  it("signs the decoded values, UTF-8, matching an independent computation", () => {
    // printf '%s' 'https://api.parley.example/v1/channels/webhooks/twilio?ch=1AccountSidAC…01BodyHello wörld 👋 & more+1From+14155550123MessageSidSM…01To+14155550100' \
    //   | openssl dgst -sha1 -hmac f00dfacef00dfacef00dfacef00dface -binary | base64
    const params = {
      To: "+14155550100",
      From: "+14155550123",
      Body: "Hello wörld 👋 & more+1",
      MessageSid: "SM00000000000000000000000000000001",
      AccountSid: "AC00000000000000000000000000000001",
    };
    expect(
      computeTwilioSignature(
        "f00dfacef00dfacef00dfacef00dface",
        "https://api.parley.example/v1/channels/webhooks/twilio?ch=1",
        params,
      ),
    ).toBe("sGqm49U27nipYbTvzLE6OFE0UtM=");
  });

  it("signs the URL alone when there are no parameters", () => {
    expect(computeTwilioSignature(AUTH_TOKEN, URL_)).toBe(computeTwilioSignature(AUTH_TOKEN, URL_, {}));
    expect(computeTwilioSignature(AUTH_TOKEN, URL_)).not.toBe(EXAMPLE.signature);
  });
});

describe("verifyTwilioSignature", () => {
  const { params, signature } = EXAMPLE;

  it("accepts Twilio's documented signature", () => {
    expect(verifyTwilioSignature(AUTH_TOKEN, URL_, params, signature)).toBe(true);
  });

  it.each([
    ["a changed value", { ...params, Digits: "9999" }],
    ["an added parameter", { ...params, Body: "hi" }],
    ["a removed parameter", { CallSid: params.CallSid, Caller: params.Caller, Digits: params.Digits, To: params.To }],
    ["a value moved to another name", { ...params, From: params.To, To: params.From }],
  ])("rejects %s", (_, tampered) => {
    expect(verifyTwilioSignature(AUTH_TOKEN, URL_, tampered, signature)).toBe(false);
  });

  it.each([
    ["another query", "https://mycompany.com/myapp.php?foo=1&bar=3"],
    ["no query", "https://mycompany.com/myapp.php"],
    ["another path", "https://mycompany.com/other.php?foo=1&bar=2"],
    ["another host", "https://evil.example/myapp.php?foo=1&bar=2"],
    ["http instead of https", "http://mycompany.com/myapp.php?foo=1&bar=2"],
    ["another port", "https://mycompany.com:8443/myapp.php?foo=1&bar=2"],
  ])("rejects %s in the URL", (_, url) => {
    expect(verifyTwilioSignature(AUTH_TOKEN, url, params, signature)).toBe(false);
  });

  it.each([
    ["missing", undefined],
    ["null", null],
    ["empty", ""],
    ["one character short", signature.slice(0, -1)],
    ["in another case", signature.toLowerCase()],
    ["an array", [signature]],
    ["another token's", computeTwilioSignature("54321", URL_, params)],
  ])("rejects a %s header", (_, header) => {
    expect(verifyTwilioSignature(AUTH_TOKEN, URL_, params, header)).toBe(false);
  });

  it("rejects everything with an empty token", () => {
    expect(verifyTwilioSignature("", URL_, params, computeTwilioSignature("", URL_, params))).toBe(false);
  });

  it("accepts a signature made with the default port written out or left out, as Twilio's SDKs do", () => {
    const withPort = computeTwilioSignature(AUTH_TOKEN, "https://mycompany.com:443/myapp.php?foo=1&bar=2", params);
    expect(verifyTwilioSignature(AUTH_TOKEN, URL_, params, withPort)).toBe(true);
    expect(
      verifyTwilioSignature(AUTH_TOKEN, "https://mycompany.com:443/myapp.php?foo=1&bar=2", params, signature),
    ).toBe(true);
    // Only the scheme's default port: 80 is not https's.
    const port80 = computeTwilioSignature(AUTH_TOKEN, "https://mycompany.com:80/myapp.php?foo=1&bar=2", params);
    expect(verifyTwilioSignature(AUTH_TOKEN, URL_, params, port80)).toBe(false);
  });

  it("ignores spaces around the header's value", () => {
    expect(verifyTwilioSignature(AUTH_TOKEN, URL_, params, ` ${signature} `)).toBe(true);
  });
});
