import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adapterFor, defaultVonageOptions } from "../src/adapters.js";
import { CredentialCheckError, checkCredentials } from "../src/credentials.js";
import { ChannelProviderError, liveProviderOf, liveProvidersOf, splitSecrets } from "../src/settings.js";
import { defaultTwilioOptions } from "../src/sms/twilio/client.js";
import { startTwilioSimulator, type TwilioSimulator, twilioSid } from "../testing/twilio-simulator.js";
import { generateVonageKeyPair, type VonageKeyPair } from "../testing/vonage-simulator.js";

/**
 * The wiring both SMS providers share (issue 40): an `sms` channel is connected with Twilio or
 * Vonage as its `provider` setting says, with the settings every SMS channel has beside the
 * provider's; the credential check and the adapter are the provider's.
 */
let twilio: TwilioSimulator;
let vonageKeys: VonageKeyPair;

beforeAll(async () => {
  twilio = await startTwilioSimulator();
  vonageKeys = await generateVonageKeyPair();
});
afterAll(() => twilio.close());

function twilioSettings(overrides: Record<string, unknown> = {}) {
  return { account_sid: twilio.accountSid, auth_token: twilio.authToken, from: "+14155550100", ...overrides };
}

function vonageSettings(overrides: Record<string, unknown> = {}) {
  return {
    application_id: "aaaaaaaa-bbbb-cccc-dddd-0123456789ab",
    private_key: vonageKeys.privateKey,
    signature_secret: "sig-secret-0123456789abcdef",
    from: "447700900000",
    ...overrides,
  };
}

describe("liveProviderOf", () => {
  it("names Twilio and Vonage as the providers of sms, and one provider for the other types", () => {
    expect(liveProvidersOf("sms")).toEqual(["twilio", "vonage"]);
    expect(liveProvidersOf("whatsapp")).toEqual(["meta"]);
    expect(liveProviderOf("email")?.provider).toBe("smtp");
  });

  it("refuses an sms channel without a provider, or with another, naming the choices", () => {
    for (const provider of [undefined, "sandbox", "nexmo"]) {
      const error = (() => {
        try {
          liveProviderOf("sms", provider);
        } catch (caught) {
          return caught;
        }
      })();
      expect(error).toBeInstanceOf(ChannelProviderError);
      expect((error as Error).message).toContain("provider=twilio or provider=vonage");
    }
  });

  it("keeps the settings every SMS channel has (mms, default_region) beside Twilio's, with Twilio's checks", () => {
    const twilioSms = liveProviderOf("sms", "twilio");
    expect(twilioSms?.provider).toBe("twilio");
    const parsed = twilioSms?.schema.parse(twilioSettings({ mms: "true", default_region: "gb", mps: "3" }));
    expect(parsed).toMatchObject({ mms: true, default_region: "GB", mps: 3, from: "+14155550100" });
    expect(twilioSms?.schema.parse(twilioSettings())).toMatchObject({ mms: false, default_region: "US" });
    // Twilio's own rule: exactly one sender.
    const both = twilioSms?.schema.safeParse(twilioSettings({ messaging_service_sid: twilioSid("MG") }));
    expect(both?.success).toBe(false);
    expect(twilioSms?.schema.safeParse(twilioSettings({ default_region: "XX" })).success).toBe(false);
    expect(splitSecrets(smsProvider("twilio"), parsed ?? {}).secret).toEqual({ auth_token: twilio.authToken });
  });

  it("keeps them beside Vonage's too", () => {
    const vonage = liveProviderOf("sms", "vonage");
    expect(vonage?.provider).toBe("vonage");
    const parsed = vonage?.schema.parse(vonageSettings({ default_region: "GB" }));
    expect(parsed).toMatchObject({ mms: false, default_region: "GB", from: "447700900000" });
    const secret = splitSecrets(smsProvider("vonage"), parsed ?? {}).secret;
    expect(Object.keys(secret).sort()).toEqual(["private_key", "signature_secret"]);
  });
});

describe("checkCredentials for sms", () => {
  it("asks Twilio about the account with its credentials, and refuses a wrong token with Twilio's answer", async () => {
    twilio.reset();
    await checkCredentials("sms", "twilio", twilioSettings(), { meta: metaOptions(), twilio: twilio.options() });
    expect(twilio.requests.map((request) => request.path)).toEqual([`/2010-04-01/Accounts/${twilio.accountSid}.json`]);
    const wrong = await checkCredentials("sms", "twilio", twilioSettings({ auth_token: "wrong" }), {
      meta: metaOptions(),
      twilio: twilio.options(),
    }).catch((error: unknown) => error);
    expect(wrong).toBeInstanceOf(CredentialCheckError);
    expect((wrong as Error).message).toContain("Authenticate (code 20003)");
    expect((wrong as Error).message).not.toContain("wrong");
  });

  it("checks that Vonage's private key signs a token, and refuses settings that cannot", async () => {
    await checkCredentials("sms", "vonage", vonageSettings(), { meta: metaOptions() });
    const bad = await checkCredentials("sms", "vonage", vonageSettings({ private_key: "not a key" }), {
      meta: metaOptions(),
    }).catch((error: unknown) => error);
    expect(bad).toBeInstanceOf(CredentialCheckError);
  });
});

describe("adapterFor sms", () => {
  const options = {
    sandbox: { deliveryDelayMs: 0, readDelayMs: 0 },
    meta: metaOptions(),
    twilio: defaultTwilioOptions,
    vonage: defaultVonageOptions,
    publicBaseUrl: "https://parley.example",
  };

  it("paces a Twilio channel by its sender, from the channel's opened settings", () => {
    const channel = (settings: Record<string, unknown>) => ({ type: "sms" as const, provider: "twilio", settings });
    expect(adapterFor(channel(twilioSettings()), options)?.messagesPerSecond).toBe(1);
    expect(adapterFor(channel(twilioSettings({ from: "+18005550100" })), options)?.messagesPerSecond).toBe(3);
    expect(adapterFor(channel(twilioSettings({ from: "12345" })), options)?.messagesPerSecond).toBe(100);
    expect(adapterFor(channel(twilioSettings({ mps: "7" })), options)?.messagesPerSecond).toBe(7);
  });

  it("paces a Vonage channel by its number", () => {
    const channel = (settings: Record<string, unknown>) => ({ type: "sms" as const, provider: "vonage", settings });
    expect(adapterFor(channel(vonageSettings({ from: "14155550100" })), options)?.messagesPerSecond).toBe(1);
    expect(adapterFor(channel(vonageSettings({ mps: "5" })), options)?.messagesPerSecond).toBe(5);
  });

  it("has no adapter for an unknown sms provider", () => {
    expect(adapterFor({ type: "sms", provider: "nexmo", settings: {} }, options)).toBeUndefined();
  });
});

function smsProvider(name: string) {
  const provider = liveProviderOf("sms", name);
  if (!provider) throw new Error(`no sms provider ${name}`);
  return provider;
}

function metaOptions() {
  return { graphBaseUrl: "http://127.0.0.1:1", apiVersion: "v23.0", timeoutMs: 1000 };
}
