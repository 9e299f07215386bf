import { describe, expect, it } from "vitest";
import {
  TWILIO_SECRET_SETTINGS,
  twilioCredentials,
  twilioPace,
  twilioProviderSettings,
  twilioSenderKind,
  twilioSmsSettings,
} from "../src/sms/twilio/settings.js";

const ACCOUNT_SID = "AC0123456789abcdef0123456789abcdef";
const KEY_SID = "SK0123456789abcdef0123456789abcdef";
const SERVICE_SID = "MG0123456789abcdef0123456789abcdef";
const BASE = { account_sid: ACCOUNT_SID, auth_token: "token-123" };

function problems(settings: Record<string, unknown>): string[] {
  const result = twilioSmsSettings.safeParse(settings);
  if (result.success) return [];
  return result.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
}

function parsed(settings: Record<string, unknown>) {
  return twilioSmsSettings.parse(settings);
}

describe("twilioSmsSettings", () => {
  it("takes an account, its Auth Token and a number, as the CLI gives them", () => {
    expect(parsed({ provider: "twilio", ...BASE, from: "+14155550100" })).toEqual({
      provider: "twilio",
      ...BASE,
      from: "+14155550100",
    });
  });

  it("takes a Messaging Service instead of a number", () => {
    expect(parsed({ ...BASE, messaging_service_sid: SERVICE_SID }).messaging_service_sid).toBe(SERVICE_SID);
  });

  it.each([
    ["neither", {}, "not neither"],
    ["both", { from: "+14155550100", messaging_service_sid: SERVICE_SID }, "not both"],
  ])("refuses %s sender, saying which setting to choose", (_, senders, which) => {
    expect(problems({ ...BASE, ...senders })).toEqual([
      `from: set exactly one sender: from (a phone number or short code) or messaging_service_sid, ${which}`,
    ]);
  });

  it.each([
    [
      "account_sid",
      { account_sid: "AC123" },
      "account_sid: must be the Account SID shown in Twilio's Console: AC followed by 32 hex digits",
    ],
    [
      "account_sid",
      { account_sid: KEY_SID },
      "account_sid: must be the Account SID shown in Twilio's Console: AC followed by 32 hex digits",
    ],
    [
      "account_sid",
      { account_sid: `${ACCOUNT_SID}0` },
      "account_sid: must be the Account SID shown in Twilio's Console: AC followed by 32 hex digits",
    ],
    [
      "messaging_service_sid",
      { from: undefined, messaging_service_sid: "MGxyz" },
      "messaging_service_sid: must be a Messaging Service SID: MG followed by 32 hex digits",
    ],
    [
      "api_key_sid",
      { api_key_sid: ACCOUNT_SID, api_key_secret: "s" },
      "api_key_sid: must be an API key SID: SK followed by 32 hex digits",
    ],
  ])("refuses a malformed %s with a clear message", (_, bad, message) => {
    expect(problems({ ...BASE, from: "+14155550100", ...bad })).toEqual([message]);
  });

  it("accepts SIDs whatever the case of their hex digits, and trims them", () => {
    expect(parsed({ ...BASE, account_sid: ` AC${"ABCDEF0123456789".repeat(2)} `, from: "12345" }).account_sid).toBe(
      `AC${"ABCDEF0123456789".repeat(2)}`,
    );
  });

  it("normalises a phone number to E.164 and takes 5–6 digit short codes", () => {
    expect(parsed({ ...BASE, from: " +1 (415) 555-0100 " }).from).toBe("+14155550100");
    expect(parsed({ ...BASE, from: "12345" }).from).toBe("12345");
    expect(parsed({ ...BASE, from: "123456" }).from).toBe("123456");
  });

  it.each(["4155550100", "+1", "1234", "1234567", "sender", "+1415555010000000"])("refuses the sender %s", (from) => {
    expect(problems({ ...BASE, from })).toEqual([
      "from: must be a phone number in E.164 form (+ country code and number) or a 5–6 digit short code",
    ]);
  });

  it("requires the Auth Token even with an API key: Twilio signs webhooks with it", () => {
    expect(problems({ account_sid: ACCOUNT_SID, api_key_sid: KEY_SID, api_key_secret: "s", from: "12345" })).toEqual([
      "auth_token: Invalid input: expected string, received undefined",
    ]);
    expect(problems({ ...BASE, auth_token: "  ", from: "12345" })).toEqual(["auth_token: must not be empty"]);
  });

  it("needs both halves of an API key", () => {
    expect(problems({ ...BASE, from: "12345", api_key_sid: KEY_SID })).toEqual([
      "api_key_secret: an API key needs both api_key_sid and api_key_secret",
    ]);
    expect(problems({ ...BASE, from: "12345", api_key_secret: "s" })).toEqual([
      "api_key_sid: an API key needs both api_key_sid and api_key_secret",
    ]);
  });

  it("reads mms from true/false or their text, and nothing else", () => {
    expect(parsed({ ...BASE, from: "12345", mms: "true" }).mms).toBe(true);
    expect(parsed({ ...BASE, from: "12345", mms: "false" }).mms).toBe(false);
    expect(parsed({ ...BASE, from: "12345", mms: true }).mms).toBe(true);
    expect(parsed({ ...BASE, from: "12345" }).mms).toBeUndefined();
    expect(problems({ ...BASE, from: "12345", mms: "yes" })).toHaveLength(1);
  });

  it("reads mps as a positive number or its text", () => {
    expect(parsed({ ...BASE, from: "12345", mps: "2.5" }).mps).toBe(2.5);
    expect(parsed({ ...BASE, from: "12345", mps: 40 }).mps).toBe(40);
    for (const mps of ["0", 0, -1, "-1", "fast", ""]) {
      expect(problems({ ...BASE, from: "12345", mps }), String(mps)).toHaveLength(1);
    }
  });

  it("refuses another provider's settings", () => {
    expect(problems({ provider: "vonage", ...BASE, from: "12345" })).toHaveLength(1);
  });

  it("names its secrets for the catalogue", () => {
    expect(TWILIO_SECRET_SETTINGS).toEqual(["auth_token", "api_key_secret"]);
    expect(twilioProviderSettings).toMatchObject({ provider: "twilio", secret: ["auth_token", "api_key_secret"] });
    expect(twilioProviderSettings.schema.safeParse({ ...BASE, from: "12345" }).success).toBe(true);
  });
});

describe("twilioPace", () => {
  it.each([
    ["+14155550100", "long_code", 1],
    ["+447700900123", "long_code", 1],
    ["+18005550100", "toll_free", 3],
    ["+18335550100", "toll_free", 3],
    ["+18445550100", "toll_free", 3],
    ["+18555550100", "toll_free", 3],
    ["+18665550100", "toll_free", 3],
    ["+18775550100", "toll_free", 3],
    ["+18885550100", "toll_free", 3],
    ["+18225550100", "long_code", 1],
    ["+18995550100", "long_code", 1],
    ["12345", "short_code", 100],
    ["123456", "short_code", 100],
  ])("paces %s as a %s: %i a second", (from, kind, pace) => {
    const settings = parsed({ ...BASE, from });
    expect(twilioSenderKind(settings)).toBe(kind);
    expect(twilioPace(settings)).toBe(pace);
  });

  it("paces a Messaging Service at 1 a second unless mps says more", () => {
    expect(twilioPace(parsed({ ...BASE, messaging_service_sid: SERVICE_SID }))).toBe(1);
    expect(twilioPace(parsed({ ...BASE, messaging_service_sid: SERVICE_SID, mps: "25" }))).toBe(25);
  });

  it("lets mps override any sender's default", () => {
    expect(twilioPace(parsed({ ...BASE, from: "12345", mps: "30" }))).toBe(30);
    expect(twilioPace(parsed({ ...BASE, from: "+18005550100", mps: 0.5 }))).toBe(0.5);
  });
});

describe("twilioCredentials", () => {
  it("uses the API key when there is one, else the Account SID and Auth Token", () => {
    expect(twilioCredentials(parsed({ ...BASE, from: "12345" }))).toEqual({
      accountSid: ACCOUNT_SID,
      username: ACCOUNT_SID,
      password: "token-123",
    });
    expect(
      twilioCredentials(parsed({ ...BASE, from: "12345", api_key_sid: KEY_SID, api_key_secret: "key-secret" })),
    ).toEqual({
      accountSid: ACCOUNT_SID,
      username: KEY_SID,
      password: "key-secret",
    });
  });
});
