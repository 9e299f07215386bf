import { createPrivateKey, generateKeyPairSync } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import {
  VONAGE_SMS_SECRET_SETTINGS,
  vonagePace,
  vonageSmsProvider,
  vonageSmsSettings,
} from "../src/sms/vonage/settings.js";
import { generateVonageKeyPair, type VonageKeyPair } from "../testing/vonage-simulator.js";

const APPLICATION_ID = "aaaaaaaa-bbbb-cccc-dddd-0123456789ab";

describe("vonageSmsSettings", () => {
  let keys: VonageKeyPair;
  beforeAll(async () => {
    keys = await generateVonageKeyPair();
  });

  const settings = (overrides: Record<string, unknown> = {}) => ({
    application_id: APPLICATION_ID,
    private_key: keys.privateKey,
    signature_secret: "sig-secret-0123456789abcdef",
    from: "447700900000",
    ...overrides,
  });

  it("takes a private key pasted on one line with \\n escapes, as a CLI user types it, and stores it as PEM", () => {
    const escaped = keys.privateKey.trim().replaceAll("\n", "\\n");
    expect(escaped).not.toContain("\n");

    const parsed = vonageSmsSettings.parse(settings({ private_key: escaped }));

    expect(parsed.private_key).toMatch(/^-----BEGIN PRIVATE KEY-----\n[A-Za-z0-9+/=\n]+\n-----END PRIVATE KEY-----\n$/);
    // The same key, not merely a well-formed one.
    expect(createPrivateKey(parsed.private_key).export({ format: "jwk" })).toEqual(
      createPrivateKey(keys.privateKey).export({ format: "jwk" }),
    );
  });

  it("takes the key with Windows line ends, in quotes, or with its lines run together by spaces", () => {
    const body = keys.privateKey.trim().split("\n").slice(1, -1).join(" ");
    for (const variant of [
      keys.privateKey.replaceAll("\n", "\r\n"),
      `"${keys.privateKey.trim()}"`,
      `-----BEGIN PRIVATE KEY----- ${body} -----END PRIVATE KEY-----`,
    ]) {
      expect(vonageSmsSettings.parse(settings({ private_key: variant })).private_key).toBe(
        vonageSmsSettings.parse(settings()).private_key,
      );
    }
  });

  it("converts a PKCS#1 key (BEGIN RSA PRIVATE KEY) to PKCS#8", () => {
    const pkcs1 = createPrivateKey(keys.privateKey).export({ type: "pkcs1", format: "pem" }).toString();
    expect(pkcs1).toContain("BEGIN RSA PRIVATE KEY");

    expect(vonageSmsSettings.parse(settings({ private_key: pkcs1 })).private_key).toBe(
      vonageSmsSettings.parse(settings()).private_key,
    );
  });

  it("stores values that parse again to themselves", () => {
    const once = vonageSmsSettings.parse(
      settings({ application_id: APPLICATION_ID.toUpperCase(), from: "+44 7700 900000", mps: "30" }),
    );
    expect(once).toMatchObject({ application_id: APPLICATION_ID, from: "447700900000", mps: 30 });
    expect(vonageSmsSettings.parse(once)).toEqual(once);
  });

  it("refuses an application id that is not a UUID, saying what it must be", () => {
    const result = vonageSmsSettings.safeParse(settings({ application_id: "my-app" }));

    expect(result.success).toBe(false);
    const issue = result.error?.issues[0];
    expect(issue?.path).toEqual(["application_id"]);
    expect(issue?.message).toContain("must be the Vonage application's id, a UUID");
  });

  it.each([
    ["not PEM at all", () => "hunter2", "PEM"],
    ["a public key", () => keys.publicKey, "not a public key"],
    [
      "a PEM cut short",
      () => {
        const lines = keys.privateKey.trim().split("\n");
        return [...lines.slice(0, 6), lines.at(-1)].join("\n");
      },
      "not a readable private key",
    ],
    [
      "an encrypted key",
      () =>
        createPrivateKey(keys.privateKey)
          .export({ type: "pkcs8", format: "pem", cipher: "aes-256-cbc", passphrase: "pw" })
          .toString(),
      "encrypted",
    ],
    [
      "an EC key",
      () =>
        generateKeyPairSync("ec", { namedCurve: "P-256" })
          .privateKey.export({ type: "pkcs8", format: "pem" })
          .toString(),
      "must be an RSA key",
    ],
    [
      "a 1024-bit RSA key",
      () =>
        generateKeyPairSync("rsa", { modulusLength: 1024 })
          .privateKey.export({ type: "pkcs8", format: "pem" })
          .toString(),
      "at least 2048 bits",
    ],
  ])("refuses %s as private_key, without quoting it", (_case, key, words) => {
    const value = key();
    const result = vonageSmsSettings.safeParse(settings({ private_key: value }));

    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual(["private_key"]);
    expect(result.error?.issues[0]?.message).toContain(words);
    const body = value.split("\n")[1] ?? value;
    expect(JSON.stringify(result.error?.issues)).not.toContain(body);
  });

  it.each([
    ["+447700900000", "447700900000"],
    ["447700900000", "447700900000"],
    ["+1 (415) 555-0101", "14155550101"],
    ["12345", "12345"],
    ["Parley", "Parley"],
    ["Parley Shop", "Parley Shop"],
  ])("takes %s as the sender %s", (input, stored) => {
    expect(vonageSmsSettings.parse(settings({ from: input })).from).toBe(stored);
  });

  it.each([["ParleyShop12"], [""], ["+12"], ["Parley!"], ["1234567890123456"]])("refuses %j as the sender", (input) => {
    const result = vonageSmsSettings.safeParse(settings({ from: input }));
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual(["from"]);
  });

  it("refuses a pace that is not a positive number", () => {
    expect(vonageSmsSettings.safeParse(settings({ mps: "0" })).success).toBe(false);
    expect(vonageSmsSettings.safeParse(settings({ mps: "fast" })).success).toBe(false);
  });

  it("names private_key and signature_secret as the secrets", () => {
    expect(VONAGE_SMS_SECRET_SETTINGS).toEqual(["private_key", "signature_secret"]);
    expect(vonageSmsProvider).toMatchObject({ provider: "vonage", secret: ["private_key", "signature_secret"] });
  });
});

describe("vonagePace", () => {
  it("is the channel's mps when set", () => {
    expect(vonagePace({ from: "14155550101", mps: 12 })).toBe(12);
  });

  it("is 1 message a second from a US or Canadian number, as Vonage restricts US long numbers", () => {
    expect(vonagePace({ from: "14155550101" })).toBe(1);
    expect(vonagePace({ from: "16135550101" })).toBe(1);
  });

  it("is the API key's default 30 a second from other numbers, short codes and sender ids", () => {
    expect(vonagePace({ from: "447700900000" })).toBe(30);
    expect(vonagePace({ from: "12345" })).toBe(30);
    expect(vonagePace({ from: "Parley" })).toBe(30);
  });
});
