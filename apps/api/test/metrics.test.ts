import { randomBytes } from "node:crypto";
import { sendWebhook, whatsappTextMessage } from "@parley/channels/testing";
import { createDatabaseClient } from "@parley/db";
import { channelStatuses, channelTypes } from "@parley/schema";
import { sql } from "drizzle-orm";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectChannel } from "../src/channels/service.js";
import { loadConfig } from "../src/config.js";
import { type RunningApi, startApi } from "../src/server.js";
import { sendableConversation, sendText, testClient } from "./delivery-helpers.js";
import { as, createTestOrganization, expectError, type TestApi, useTestApi, useTestWorker } from "./harness.js";

const TOKEN = "metrics-token-of-this-test-0123456789";

async function scrape(url: string, token?: string) {
  const response = await fetch(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  return { status: response.status, headers: response.headers, text: await response.text() };
}

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of the text exposition format (`name{a="b",...} value`). */
function samples(text: string): Sample[] {
  const found: Sample[] = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[pair[1] as string] = pair[2] as string;
    found.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return found;
}

/**
 * Looks like an id, a key or a random text: a prefixed id (its ULID or secret has capitals or
 * digits; a label's lower-case words such as `bad_signature` are not one), a long token, many digits.
 */
const ID_LIKE = /[a-z]+_(?=[0-9a-z]*[0-9A-Z])[0-9A-Za-z]{8,}|[0-9A-Za-z_-]{24,}|\d{5,}|[0-9a-f]{8}-[0-9a-f]{4}/;

describe("GET /metrics behind METRICS_TOKEN", () => {
  const api: TestApi = useTestApi({ METRICS_TOKEN: TOKEN });
  const root = () => api.baseUrl.replace(/\/v1$/, "");

  it("answers 401 with the API's error body without the token or with a wrong one", async () => {
    const missing = await scrape(`${root()}/metrics`);
    expect(missing.status).toBe(401);
    expect(JSON.parse(missing.text).error.code).toBe("authentication_required");
    const wrong = await scrape(`${root()}/metrics`, `${TOKEN}x`);
    expect(wrong.status).toBe(401);
    expect(JSON.parse(wrong.text).error.code).toBe("invalid_api_key");
    const metrics = await scrape(`${root()}/metrics`, TOKEN);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(metrics.text).toMatch(/^process_cpu_user_seconds_total /m);
    expect(metrics.text).toMatch(/^parley_outbox_backlog\{outbox="message_outbox"\} \d+/m);
    expect(metrics.text).toMatch(/^parley_outbox_oldest_age_seconds\{outbox="event_outbox"\} [\d.e+-]+/m);
  });

  it("counts varied requests by route template, with bounded cardinality and no id in any label", async () => {
    const org = await createTestOrganization(api);
    const client = as(api, org.test);
    const conversation = await sendableConversation(client, "whatsapp");
    const secrets: string[] = [org.id, org.test, org.live, conversation.id];
    for (let index = 0; index < 30; index += 1) {
      const name = `Contact ${randomBytes(6).toString("hex")}`;
      const created = await client.post("/contacts", { body: { name } });
      expect(created.status).toBe(201);
      secrets.push(created.body.id, name);
      expect((await client.get(`/contacts/${created.body.id}`)).status).toBe(200);
      expectError(await client.get(`/contacts/contact_${randomBytes(10).toString("hex")}`), 404, "resource_not_found");
      const stray = `/nowhere/${randomBytes(8).toString("hex")}`;
      secrets.push(stray);
      await fetch(`${root()}${stray}?q=${index}`);
      await fetch(`${api.baseUrl}/contacts/${randomBytes(8).toString("hex")}`, {
        headers: { authorization: `Bearer pk_test_${randomBytes(16).toString("hex")}` },
      });
      await fetch(`${api.baseUrl}/contacts`, { method: "PROPFIND" });
    }
    const sent = await sendText(client, conversation.id, "A text that must never be a label");
    secrets.push(sent.id, "A text that must never be a label");

    const all = samples((await scrape(`${root()}/metrics`, TOKEN)).text);
    const http = all.filter((sample) => sample.name === "parley_http_requests_total");
    // 30 rounds of 6 distinct requests each fold into a handful of series.
    expect(http.length).toBeGreaterThan(3);
    expect(http.length).toBeLessThan(25);
    const routes = new Set(http.map((sample) => sample.labels.route));
    expect([...routes]).toEqual(expect.arrayContaining(["/v1/contacts/:contact_id"]));
    expect(routes).toContain("/v1/contacts");
    expect(routes).toContain("unmatched");
    const byLabels = (labels: Record<string, string>) =>
      http.find((sample) => Object.entries(labels).every(([key, value]) => sample.labels[key] === value))?.value ?? 0;
    expect(byLabels({ route: "/v1/contacts/:contact_id", method: "GET", status: "200" })).toBeGreaterThanOrEqual(30);
    expect(byLabels({ route: "/v1/contacts/:contact_id", method: "GET", status: "404" })).toBeGreaterThanOrEqual(30);
    expect(all.some((sample) => sample.name === "parley_http_request_duration_seconds_bucket")).toBe(true);
    expect(all.find((sample) => sample.name === "parley_messages_accepted_total")?.labels).toEqual({
      channel_type: "whatsapp",
    });
    // The send committed in a shared transaction of its own (group commit).
    expect(all.find((sample) => sample.name === "parley_transaction_groups_total")?.labels).toEqual({
      result: "committed",
    });
    expect(
      all.find((sample) => sample.name === "parley_transaction_group_members_count")?.value,
    ).toBeGreaterThanOrEqual(1);

    // The channel gauge: one sample per type and status (statuses, like `needs_attention`, are words, not ids).
    const channels = all.filter((sample) => sample.name === "parley_channels");
    expect(channels).toHaveLength(channelTypes.length * channelStatuses.length);
    for (const sample of all) {
      for (const value of Object.values(sample.labels)) {
        if ((channelStatuses as readonly string[]).includes(value)) continue;
        expect(value, `${sample.name} label`).not.toMatch(ID_LIKE);
        for (const secret of secrets) expect(value.includes(secret), `${sample.name} carries ${secret}`).toBe(false);
      }
    }
  });
});

describe("provider webhooks and the database pool in GET /metrics", () => {
  // Its own database and a worker: an accepted webhook is a job the worker's queue must hold.
  const api: TestApi = useTestApi({ METRICS_TOKEN: TOKEN }, { ownDatabase: true });
  useTestWorker(api);
  const root = () => api.baseUrl.replace(/\/v1$/, "");

  it("counts Meta webhooks by result, never by account, secret or text", async () => {
    const org = await createTestOrganization(api);
    const phoneNumberId = String(100_000_000_000 + Math.floor(Math.random() * 899_999_999_999));
    const appSecret = `appsecret_${randomBytes(16).toString("hex")}`;
    const verifyToken = `verify_${randomBytes(16).toString("hex")}`;
    const channel = await connectChannel(api.context.db, api.context.secretBox, {
      organizationId: org.id,
      environment: "live",
      type: "whatsapp",
      name: "Metrics WhatsApp",
      provider: "meta",
      settings: {
        phone_number_id: phoneNumberId,
        access_token: "token",
        app_secret: appSecret,
        verify_token: verifyToken,
      },
    });
    const url = `${api.baseUrl}/channels/webhooks/meta`;
    const text = "A customer's words, never a label";
    const message = (to: string) =>
      whatsappTextMessage({
        phoneNumberId: to,
        from: "15550001111",
        name: "Ada",
        id: `wamid.${randomBytes(8).toString("hex")}`,
        text,
      });
    expect((await sendWebhook(url, message(phoneNumberId), appSecret)).status).toBe(200);
    expect((await sendWebhook(url, message("199999999999"), appSecret)).status).toBe(200);
    expect((await sendWebhook(url, message(phoneNumberId), "another-secret")).status).toBe(401);
    expect((await sendWebhook(url, message(phoneNumberId), appSecret, { signature: null })).status).toBe(401);
    expect((await sendWebhook(url, "{not json", appSecret)).status).toBe(400);
    const handshake = (token: string) =>
      fetch(`${url}?hub.mode=subscribe&hub.verify_token=${token}&hub.challenge=1158201444`);
    expect((await handshake(verifyToken)).status).toBe(200);
    expect((await handshake("wrong-token")).status).toBe(403);

    const all = samples((await scrape(`${root()}/metrics`, TOKEN)).text);
    const webhooks = all.filter((sample) => sample.name === "parley_provider_webhooks_total");
    const count = (result: string) =>
      webhooks.find((sample) => sample.labels.provider === "meta" && sample.labels.result === result)?.value ?? 0;
    expect(count("accepted")).toBe(1);
    expect(count("unknown_channel")).toBe(1);
    expect(count("bad_signature")).toBe(2);
    expect(count("invalid")).toBe(1);
    expect(count("verified")).toBe(1);
    expect(count("bad_verify_token")).toBe(1);
    expect(webhooks.length).toBeLessThanOrEqual(9);
    const secrets = [org.id, channel.id, phoneNumberId, appSecret, verifyToken, text, "199999999999", "wrong-token"];
    for (const sample of all) {
      for (const value of Object.values(sample.labels)) {
        expect(value, `${sample.name} label`).not.toMatch(ID_LIKE);
        for (const secret of secrets) expect(value.includes(secret), `${sample.name} carries ${secret}`).toBe(false);
      }
    }
    const pool = (name: string) => all.find((sample) => sample.name === name)?.value;
    expect(pool("parley_db_pool_size")).toBe(10);
    expect(pool("parley_db_pool_in_use")).toBeGreaterThanOrEqual(0);
    expect(pool("parley_db_pool_waiting")).toBe(0);
  });

  // A shared transaction of sends that aborts sends each member back to run alone: the sends
  // that commit are counted once, the one that failed not at all.
  it("counts each accepted send once, when a shared transaction aborted and its sends ran again", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "whatsapp");
    const registry = api.context.metrics?.registry;
    if (!registry) throw new Error("the test app has no metrics");
    const metricValue = async (name: string, labels: Record<string, string>) => {
      const metric = await registry.getSingleMetric(name)?.get();
      const found = metric?.values.find((value) =>
        Object.entries(labels).every(([key, wanted]) => String(value.labels[key]) === wanted),
      );
      return found?.value ?? 0;
    };
    const accepted = () => metricValue("parley_messages_accepted_total", { channel_type: "whatsapp" });
    const aborted = () => metricValue("parley_transaction_groups_total", { result: "aborted" });
    await api.client.sql.unsafe(`
      create function fail_marked_message() returns trigger language plpgsql as $$
      begin
        if new.text = 'abort the shared transaction' then raise exception 'injected failure'; end if;
        return new;
      end $$;
      create constraint trigger fail_marked_message after insert on messages
        deferrable initially deferred for each row execute function fail_marked_message()`);
    try {
      // Sends that arrive together share a transaction: the marked one fails its COMMIT (a
      // deferred trigger), after every member's insert succeeded. Repeated until a burst did
      // share one (requests of one burst usually do).
      for (let burst = 0; burst < 5; burst++) {
        const [acceptedBefore, abortedBefore] = [await accepted(), await aborted()];
        const texts = [
          ...Array.from({ length: 7 }, (_, i) => `burst ${burst} send ${i}`),
          "abort the shared transaction",
        ];
        const responses = await Promise.all(
          texts.map((text) =>
            client.post("/messages", { body: { conversation_id: conversation.id, type: "text", text } }),
          ),
        );
        expect(responses.map((response) => response.status)).toEqual([...Array(7).fill(201), 500]);
        expect((await accepted()) - acceptedBefore).toBe(7);
        if ((await aborted()) > abortedBefore) return;
      }
      throw new Error("no burst of sends shared a transaction");
    } finally {
      await api.client.sql.unsafe("drop trigger fail_marked_message on messages; drop function fail_marked_message()");
    }
  });

  it("counts the pool's connections in use and the statements waiting for one", async () => {
    const client = createDatabaseClient(inject("databaseUrl"), { max: 2 });
    try {
      expect(client.pool()).toEqual({ inUse: 0, waiting: 0, max: 2 });
      const sleeps = [0, 1, 2, 3, 4].map(() => client.sql`select pg_sleep(0.3)`.then(() => client.pool()));
      await new Promise((resolve) => setImmediate(resolve));
      expect(client.pool()).toEqual({ inUse: 2, waiting: 3, max: 2 });
      await Promise.all(sleeps);
      expect(client.pool()).toEqual({ inUse: 0, waiting: 0, max: 2 });

      // A transaction holds one connection however many statements it runs; drizzle's statements count too.
      let inside: unknown;
      await client.db.transaction(async (tx) => {
        await tx.execute(sql`select 1`);
        inside = client.pool();
      });
      expect(inside).toEqual({ inUse: 1, waiting: 0, max: 2 });
      const query = client.db.execute(sql`select pg_sleep(0.2)`).then(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const during = client.pool();
      await query;
      expect(during).toEqual({ inUse: 1, waiting: 0, max: 2 });
      // A failed statement is released too.
      await expect(client.sql`select * from no_such_table`).rejects.toThrow();
      expect(client.pool()).toEqual({ inUse: 0, waiting: 0, max: 2 });
    } finally {
      await client.close();
    }
  });
});

describe("GET /metrics on METRICS_PORT", () => {
  let running: RunningApi | undefined;
  beforeAll(async () => {
    running = await startApi(
      inject("databaseUrl"),
      loadConfig({ PORT: "0", HOST: "127.0.0.1", METRICS_PORT: "0" }),
      pino({ level: "silent" }),
    );
  });
  afterAll(() => running?.close());

  it("serves the metrics on their own port, and not on the API's", async () => {
    const port = running?.metricsPort;
    expect(port).toBeGreaterThan(0);
    const metrics = await scrape(`http://127.0.0.1:${port}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(/^parley_outbox_backlog\{/m);
    expect((await scrape(`http://127.0.0.1:${running?.port}/metrics`)).status).toBe(404);
  });
});

describe("GET /metrics without METRICS_TOKEN or METRICS_PORT", () => {
  const api: TestApi = useTestApi();
  it("does not exist", async () => {
    const answer = await scrape(`${api.baseUrl.replace(/\/v1$/, "")}/metrics`);
    expect(answer.status).toBe(404);
    expect(JSON.parse(answer.text).error.code).toBe("route_not_found");
  });
});
