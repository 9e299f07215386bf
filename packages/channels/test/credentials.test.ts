import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CredentialCheckError, checkCredentials } from "../src/credentials.js";
import { type MetaSimulator, metaErrors, startMetaSimulator } from "../testing/meta-simulator.js";
import { type SmtpSink, startSmtpSink } from "../testing/smtp-sink.js";

/** `pnpm admin connect-channel` / `update-channel` ask the provider before storing (issue 24 item 6). */
let meta: MetaSimulator;
let relay: SmtpSink;
let refusing: SmtpSink;

beforeAll(async () => {
  meta = await startMetaSimulator();
  relay = await startSmtpSink();
  refusing = await startSmtpSink({ refuseLogins: { code: 535, text: "5.7.8 Authentication credentials invalid" } });
});
afterAll(async () => {
  await meta.close();
  await relay.close();
  await refusing.close();
});

function smtpUrl(sink: SmtpSink, user: string, pass: string): string {
  return `smtp://${user}:${pass}@${sink.host}:${sink.port}`;
}

async function refusal(promise: Promise<void>): Promise<CredentialCheckError> {
  const error = await promise.catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(CredentialCheckError);
  return error as CredentialCheckError;
}

describe("Meta: GET /{account id} with the access token", () => {
  it.each([
    ["whatsapp", "phone_number_id"],
    ["messenger", "page_id"],
    ["instagram", "instagram_account_id"],
  ] as const)("accepts a %s account the token can read, asking for that account", async (type, setting) => {
    const id = String(Date.now());
    meta.addAccount(id);
    meta.reset();
    await checkCredentials(type, "meta", { [setting]: id, access_token: meta.accessToken }, { meta: meta.options() });
    expect(meta.requests.map((request) => [request.method, request.path, request.headers.authorization])).toEqual([
      ["GET", `/v23.0/${id}`, `Bearer ${meta.accessToken}`],
    ]);
  });

  it("refuses with Meta's answer: a wrong token (190), an expired one, an account the token cannot read (100)", async () => {
    meta.addAccount("1234");
    const settings = (token: string, id = "1234") => ({ phone_number_id: id, access_token: token });
    const wrong = await refusal(checkCredentials("whatsapp", "meta", settings("EAAG-wrong"), { meta: meta.options() }));
    expect(wrong.message).toMatch(/Invalid OAuth access token.*\(code 190\)/);
    expect(wrong.message).not.toContain("EAAG-wrong");
    meta.failNext(1, metaErrors.tokenExpired());
    const expired = await refusal(
      checkCredentials("whatsapp", "meta", settings(meta.accessToken), { meta: meta.options() }),
    );
    expect(expired.message).toMatch(/Session has expired/);
    const unknown = await refusal(
      checkCredentials("whatsapp", "meta", settings(meta.accessToken, "999"), { meta: meta.options() }),
    );
    expect(unknown.message).toMatch(/\(code 100\)/);
  });

  it("refuses when Meta cannot be reached, saying so", async () => {
    const error = await refusal(
      checkCredentials(
        "messenger",
        "meta",
        { page_id: "1", access_token: "t" },
        { meta: meta.options({ graphBaseUrl: "http://127.0.0.1:1" }) },
      ),
    );
    expect(error.message).toMatch(/could not be reached/);
  });
});

describe("SMTP: EHLO and AUTH with smtp_url's credentials", () => {
  it("accepts a relay that takes the login, and logs in with the URL's user", async () => {
    await checkCredentials(
      "email",
      "smtp",
      { smtp_url: smtpUrl(relay, "support", "s3cret") },
      { meta: meta.options() },
    );
    expect(relay.logins).toContain("support");
  });

  it("refuses with the relay's reply when the login is refused, without the password", async () => {
    const error = await refusal(
      checkCredentials(
        "email",
        "smtp",
        { smtp_url: smtpUrl(refusing, "support", "old-pass") },
        { meta: meta.options() },
      ),
    );
    expect(error.message).toMatch(/refused the login.*535 5\.7\.8 Authentication credentials invalid/);
    expect(error.message).not.toContain("old-pass");
  });

  it("refuses a relay that cannot be reached", async () => {
    const error = await refusal(
      checkCredentials(
        "email",
        "smtp",
        { smtp_url: "smtp://u:p@127.0.0.1:1" },
        { meta: meta.options(), smtpTimeoutMs: 2000 },
      ),
    );
    expect(error.message).toMatch(/could not be used/);
  });

  it("has nothing to ask for web chat", async () => {
    await checkCredentials("webchat", "webchat", {}, { meta: meta.options() });
  });
});
