import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { signMetaPayload } from "@parley/channels";
import { findFreePort } from "@parley/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "./harness.js";

const run = promisify(execFile);
const distDir = path.resolve(import.meta.dirname, "../dist");
const marker = (label: string) => `${label}-${randomBytes(6).toString("hex")}`;

/**
 * A full run of `pnpm start` at the most talkative log level, through every path that
 * handles a key, a secret or a message body; then every log line is scanned. Only the
 * demo banner (plain text, printed once by design) may show the demo keys.
 */
describe("logs of a full run", () => {
  let dataDir: string;
  let server: ChildProcess;
  let receiver: Server;
  let output = "";
  let baseUrl: string;
  const received: string[] = [];

  const secrets = {
    inboundBody: marker("INBOUND-BODY"),
    outboundBody: marker("OUTBOUND-BODY"),
    noteBody: marker("NOTE-BODY"),
    bogusKey: `parley_test_${randomBytes(20).toString("hex")}`,
    accessToken: marker("EAAG-TOKEN"),
    appSecret: marker("APP-SECRET"),
    verifyToken: marker("VERIFY-TOKEN"),
    smtpPassword: marker("SMTP-PASSWORD"),
    liveInboundBody: marker("LIVE-INBOUND-BODY"),
  };
  const found: string[] = [];
  const env = () => {
    const { DATABASE_URL: _ignored, ...rest } = process.env;
    return { ...rest, DATA_DIR: dataDir, LOG_LEVEL: "trace", PARLEY_WEBHOOK_FAST_RETRY: "1" };
  };

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", () => {
        received.push(body);
        res.end("ok");
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    dataDir = await mkdtemp(path.join(tmpdir(), "parley-logs-"));
    const port = await findFreePort();
    baseUrl = `http://127.0.0.1:${port}/v1`;
    // Meta and SMTP unreachable: their failures are logged too, and must not carry the credentials.
    const closedPort = await findFreePort();
    server = spawn("node", [path.join(distDir, "main.js")], {
      env: { ...env(), PORT: String(port), META_GRAPH_BASE_URL: `http://127.0.0.1:${closedPort}` },
      stdio: ["ignore", "pipe", "pipe"],
    });
    server.stdout?.on("data", (chunk) => (output += chunk));
    server.stderr?.on("data", (chunk) => (output += chunk));
    await eventually(
      async () => output,
      (text) => text.includes("Parley is listening") && text.includes("test key:"),
      60_000,
    );
  });

  afterAll(async () => {
    if (server && server.exitCode === null) {
      const exited = new Promise((resolve) => server.once("exit", resolve));
      server.kill("SIGTERM");
      await exited;
    }
    receiver?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  async function admin(...args: string[]) {
    const { stdout } = await run("node", [path.join(distDir, "admin.js"), ...args, "--json"], { env: env() });
    return JSON.parse(stdout.trim());
  }

  async function request(key: string, method: string, pathname: string, body?: unknown) {
    const response = await fetch(baseUrl + pathname, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    return { status: response.status, body: (await response.json()) as any };
  }

  it("never logs a key, a secret or a message body", async () => {
    const testKey = /test key:\s+(parley_test_\w+)/.exec(output)?.[1] ?? "";
    const liveKey = /live key:\s+(parley_live_\w+)/.exec(output)?.[1] ?? "";
    const organizationId = /(org_[0-9A-Z]{26})/.exec(output)?.[1] ?? "";
    expect(testKey).not.toBe("");

    // Sandbox: a webhook endpoint (its secret), a conversation, both directions, a note.
    const port = (receiver.address() as AddressInfo).port;
    const endpoint = await request(testKey, "POST", "/webhooks", { url: `http://127.0.0.1:${port}/`, events: ["*"] });
    expect(endpoint.status).toBe(201);
    const [whatsapp] = (await request(testKey, "GET", "/channels?type=whatsapp")).body.data;
    const contact = await request(testKey, "POST", "/contacts", { name: "Ada", email: "ada@example.com" });
    const conversation = await request(testKey, "POST", "/conversations", {
      contact_id: contact.body.id,
      channel_id: whatsapp.id,
    });
    const conversationId = conversation.body.id;
    await request(testKey, "POST", "/test-helpers/inbound-messages", {
      conversation_id: conversationId,
      type: "text",
      text: secrets.inboundBody,
    });
    const sent = await request(testKey, "POST", "/messages", {
      conversation_id: conversationId,
      type: "text",
      text: secrets.outboundBody,
    });
    expect(sent.status).toBe(201);
    await request(testKey, "POST", `/conversations/${conversationId}/notes`, { body: secrets.noteBody });
    expect((await request(secrets.bogusKey, "GET", "/contacts")).status).toBe(401);

    // Live: channels connected with secrets, a signed Meta webhook, sends that fail to reach the providers.
    await admin(
      ...["connect-channel", "--org", organizationId, "--env", "live", "--type", "whatsapp", "--no-check"],
      ...["--setting", "phone_number_id=1234567890", "--setting", `access_token=${secrets.accessToken}`],
      ...["--setting", `app_secret=${secrets.appSecret}`, "--setting", `verify_token=${secrets.verifyToken}`],
    );
    await admin(
      ...["connect-channel", "--org", organizationId, "--env", "live", "--type", "email", "--no-check"],
      ...["--setting", "address=support@acme.test"],
      ...["--setting", `smtp_url=smtp://user:${secrets.smtpPassword}@127.0.0.1:1`],
    );
    const handshake = await fetch(
      `${baseUrl}/channels/webhooks/meta?hub.mode=subscribe&hub.verify_token=${secrets.verifyToken}&hub.challenge=42`,
    );
    expect(await handshake.text()).toBe("42");
    const payload = JSON.stringify(metaTextMessage("1234567890", "15550001111", secrets.liveInboundBody));
    const webhook = await fetch(`${baseUrl}/channels/webhooks/meta`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-hub-signature-256": signMetaPayload(payload, secrets.appSecret),
      },
      body: payload,
    });
    expect(webhook.status).toBe(200);
    const liveConversation = await eventually(
      async () => (await request(liveKey, "GET", "/conversations?channel_type=whatsapp")).body.data[0],
      (row) => row !== undefined,
      20_000,
    );
    await request(liveKey, "POST", "/messages", {
      conversation_id: liveConversation.id,
      type: "text",
      text: secrets.outboundBody,
    });
    const emailContact = await request(liveKey, "POST", "/contacts", { name: "Bo", email: "bo@example.com" });
    const [emailChannel] = (await request(liveKey, "GET", "/channels?type=email")).body.data;
    const emailConversation = await request(liveKey, "POST", "/conversations", {
      contact_id: emailContact.body.id,
      channel_id: emailChannel.id,
    });
    await request(liveKey, "POST", "/messages", {
      conversation_id: emailConversation.body.id,
      type: "text",
      text: secrets.outboundBody,
    });

    // The run did what it should: the webhook carried the bodies, the failures were attempted.
    await eventually(
      async () => received.join("\n"),
      (text) => text.includes(secrets.inboundBody) && text.includes(secrets.outboundBody),
      20_000,
    );
    await eventually(
      async () => output,
      (text) => text.includes("deliver_message"),
      20_000,
    );

    const secretValues = [testKey, liveKey, endpoint.body.secret, ...Object.values(secrets)];
    const lines = output.split("\n").filter((line) => line.trim().length > 0);
    const jsonLines = lines.filter((line) => line.startsWith("{"));
    expect(jsonLines.length).toBeGreaterThan(20);
    for (const line of lines) {
      // The banner prints the demo keys once, by design (decisions.md): nothing else may.
      const allowed = line.startsWith("{") ? [] : [testKey, liveKey];
      for (const value of secretValues) {
        if (line.includes(value) && !allowed.includes(value))
          found.push(`${value.slice(0, 16)}… in: ${line.slice(0, 200)}`);
      }
    }
    expect(found).toEqual([]);
  });
});

function metaTextMessage(phoneNumberId: string, from: string, text: string) {
  return {
    object: "whatsapp_business_account",
    entry: [
      {
        id: "100000000000001",
        changes: [
          {
            field: "messages",
            value: {
              messaging_product: "whatsapp",
              metadata: { display_phone_number: "15550009999", phone_number_id: phoneNumberId },
              contacts: [{ profile: { name: "Customer" }, wa_id: from }],
              messages: [
                {
                  from,
                  id: `wamid.${randomBytes(8).toString("hex")}`,
                  timestamp: "1700000000",
                  type: "text",
                  text: { body: text },
                },
              ],
            },
          },
        ],
      },
    ],
  };
}
