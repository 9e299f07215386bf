import { randomBytes } from "node:crypto";
import { channelStatuses, channelTypes } from "@parley/schema";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { loadConfig } from "../src/config.js";
import { type RunningApi, startApi } from "../src/server.js";
import { sendableConversation, sendText } from "./delivery-helpers.js";
import { as, createTestOrganization, expectError, type TestApi, useTestApi } from "./harness.js";

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

/** Looks like an id, a key or a random text: a prefixed id, a long token, many digits. */
const ID_LIKE = /[a-z]+_[0-9A-Za-z]{8,}|[0-9A-Za-z_-]{24,}|\d{5,}|[0-9a-f]{8}-[0-9a-f]{4}/;

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
