import { describe, expect, it } from "vitest";
import { normalizePhone, phoneDigitForms } from "../src/sms/phone.js";
import { smsSettingsOf } from "../src/sms/settings.js";

describe("normalizePhone", () => {
  it.each([
    ["(415) 555-0100", "+14155550100"],
    ["415.555.0100", "+14155550100"],
    ["+1 415-555-0100", "+14155550100"],
    ["1 415 555 0100", "+14155550100"],
    ["+1 (415) 555-0100 ext. 12", "+14155550100"],
  ])("reads %j as a number of the default region, US: %s", (typed, e164) => {
    expect(normalizePhone(typed)).toBe(e164);
  });

  it("reads a number with its country code whatever the default region", () => {
    expect(normalizePhone("+44 7700 900123")).toBe("+447700900123");
    expect(normalizePhone("+44 7700 900123", "FR")).toBe("+447700900123");
  });

  it("reads a national number and an international prefix by the given region", () => {
    expect(normalizePhone("07700 900123", "GB")).toBe("+447700900123");
    expect(normalizePhone("0044 7700 900123", "gb")).toBe("+447700900123");
    expect(normalizePhone("011 44 7700 900123", "US")).toBe("+447700900123");
  });

  it("falls back to US for a region it does not know", () => {
    expect(normalizePhone("(415) 555-0100", "ZZ")).toBe("+14155550100");
  });

  it.each(["12", "abc", "+999 123", "", "555-0100"])("refuses %j: no E.164 number", (typed) => {
    expect(normalizePhone(typed)).toBeNull();
  });
});

describe("phoneDigitForms", () => {
  it("lists the digits a stored phone of this number may hold", () => {
    expect(phoneDigitForms("+14155550100")).toEqual(
      expect.arrayContaining(["14155550100", "0014155550100", "4155550100"]),
    );
    expect(phoneDigitForms("+447700900123")).toEqual(
      expect.arrayContaining(["447700900123", "00447700900123", "7700900123", "07700900123"]),
    );
  });
});

describe("smsSettingsOf", () => {
  it("defaults to text only and the US", () => {
    expect(smsSettingsOf({})).toEqual({ mms: false, default_region: "US" });
    expect(smsSettingsOf(null)).toEqual({ mms: false, default_region: "US" });
  });

  it("reads the settings as pnpm admin gives them, as strings", () => {
    expect(smsSettingsOf({ mms: "true", default_region: "gb" })).toEqual({ mms: true, default_region: "GB" });
  });
});
