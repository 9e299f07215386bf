import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AuthenticationError,
  ConflictError,
  NotFoundError,
  Parley,
  type ParleyError,
  ValidationError,
} from "../src/index.js";

/**
 * Against the real Parley (apps/api/dist/main.js: API and worker) on a real PostgreSQL
 * (the embedded one in a temporary directory, or DATABASE_URL), over HTTP only.
 */
const mainScript = path.resolve(import.meta.dirname, "../../../apps/api/dist/main.js");

let server: ChildProcess;
let dataDir: string;
let parley: Parley;
let apiKey: string;
let baseUrl: string;
let output = "";

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

async function until<T>(read: () => Promise<T | undefined>, what: string, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "parley-sdk-"));
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}/v1`;
  server = spawn(process.execPath, [mainScript], {
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: "warn",
      SANDBOX_DELIVERY_DELAY_MS: "0",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  server.stdout?.on("data", (chunk) => (output += chunk));
  server.stderr?.on("data", (chunk) => (output += chunk));
  const key = await until(
    async () => {
      if (server.exitCode !== null) throw new Error(`Parley exited:\n${output}`);
      return /test key:\s+(parley_test_\S+)/.exec(output)?.[1];
    },
    "Parley to start",
    240_000,
  );
  apiKey = key;
  parley = new Parley({ apiKey, baseUrl });
});

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.once("exit", resolve));
    server.kill("SIGTERM");
    await exited;
  }
  await rm(dataDir, { recursive: true, force: true });
});

describe("the quickstart flow against a real Parley", () => {
  it("contact -> conversation -> text -> media -> a webhook event verified", async () => {
    const received: { body: string; signature: string }[] = [];
    const receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", () => {
        received.push({ body, signature: String(req.headers["x-parley-signature"]) });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    try {
      const webhook = await parley.webhooks.create({
        url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
        events: ["message.delivered"],
      });
      const contact = await parley.contacts.create({ name: "Ada", phone: "+15550100" });
      const [whatsapp] = (await parley.channels.list({ type: "whatsapp" })).data;
      if (!whatsapp) throw new Error("no sandbox WhatsApp channel");
      const conversation = await parley.conversations.create({ contact_id: contact.id, channel_id: whatsapp.id });
      await parley.testHelpers.inboundMessages.create({ conversation_id: conversation.id, type: "text", text: "Hi" });

      const text = await parley.messages.send({ conversation_id: conversation.id, type: "text", text: "Hello Ada" });
      expect(text.status).toBe("queued");
      const media = await parley.messages.sendMedia({
        conversation_id: conversation.id,
        type: "document",
        file: new TextEncoder().encode("invoice 42"),
        filename: "invoice.txt",
        text: "Your invoice",
      });
      expect(media.attachment?.content_type).toBe("text/plain");

      const download = await parley.attachments.download(media.attachment?.id ?? "");
      expect(download.filename).toBe("invoice.txt");
      expect(await new Response(download.stream).text()).toBe("invoice 42");

      const delivered = await until(
        async () => received.find((entry) => entry.body.includes(text.id)),
        "message.delivered of the text",
      );
      const event = await parley.webhooks.constructEvent(delivered.body, delivered.signature, webhook.secret);
      if (event.type !== "message.delivered") throw new Error(`expected message.delivered, got ${event.type}`);
      // Typed by its type: no cast.
      expect(event.data.message.id).toBe(text.id);
      expect(event.data.message.status).toBe("delivered");
      expect((await parley.messages.get(text.id)).status).toBe("delivered");
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  it("walks a list of 250 items across pages", async () => {
    const tag = await parley.tags.create({ name: `walk-${Date.now()}` });
    for (let i = 0; i < 250; i += 25) {
      await Promise.all(
        Array.from({ length: 25 }, (_, j) => parley.contacts.create({ name: `Walker ${i + j}`, tags: [tag.id] })),
      );
    }
    const ids = new Set<string>();
    for await (const contact of parley.contacts.list({ limit: 100, tag_id: tag.id })) ids.add(contact.id);
    expect(ids.size).toBe(250);
  });

  it("raises each error family with the API's code and request id", async () => {
    const wrongKey = new Parley({ apiKey: `parley_test_${"x".repeat(40)}`, baseUrl, maxRetries: 0 });
    await expect(wrongKey.contacts.list()).rejects.toMatchObject({ code: "invalid_api_key", status: 401 });
    await expect(wrongKey.contacts.list()).rejects.toBeInstanceOf(AuthenticationError);

    const missing = await parley.contacts.get("cnt_00000000000000000000000000").catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing).toMatchObject({ code: "resource_not_found" });
    expect((missing as NotFoundError).requestId).toMatch(/^req_/);

    const invalid = await parley.contacts.create({ name: "" }).catch((error: unknown) => error);
    expect(invalid).toBeInstanceOf(ValidationError);
    expect(invalid).toMatchObject({ code: "validation_error", param: "name" });

    await parley.contacts.create({ name: "Once" }, { idempotencyKey: "sdk-reuse" });
    const reuse = await parley.contacts
      .create({ name: "Twice" }, { idempotencyKey: "sdk-reuse" })
      .catch((error: unknown) => error);
    expect(reuse).toBeInstanceOf(ConflictError);
    expect(reuse).toMatchObject({ code: "idempotency_key_reuse" });
  });

  it("reads the 413 payload_too_large of a 17 MB upload, never a reset connection", async () => {
    // No retry: a connection reset would otherwise be retried and hidden.
    const once = new Parley({ apiKey, baseUrl, maxRetries: 0 });
    const file = new Uint8Array(17 * 1024 * 1024).fill(7);
    const outcomes: string[] = [];
    // Racy before the server lingered after its answer: several rounds make a reset likely.
    for (let round = 0; round < 5; round++) {
      const error = (await once.uploads.create(file, { filename: "huge.pdf" }).catch((caught: unknown) => caught)) as
        | ParleyError
        | undefined;
      outcomes.push(`${error?.constructor.name} ${error?.status} ${error?.code}`);
    }
    expect(outcomes).toEqual(Array(5).fill("ValidationError 413 payload_too_large"));
  });
});
