import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { findFreePort } from "@parley/db";
import { afterAll, describe, expect, it } from "vitest";
import { sendableConversation, sendText } from "./delivery-helpers.js";
import { as, createTestOrganization, eventually, useTestApi, useTestWorker } from "./harness.js";

/** Debian's `prometheus` package (.ci/run installs it); the test is skipped where it is not installed. */
const PROMETHEUS = process.env.PROMETHEUS_PATH ?? "/usr/bin/prometheus";
const hasPrometheus = existsSync(PROMETHEUS);
if (!hasPrometheus) {
  console.warn(`${PROMETHEUS} is not installed (apt-get install prometheus): the Prometheus scrape test is skipped`);
}

const TOKEN = "prometheus-scrape-test-token-0123456789";

describe.skipIf(!hasPrometheus)("a real Prometheus scraping an API and a worker", () => {
  const api = useTestApi({ METRICS_TOKEN: TOKEN }, { ownDatabase: true });
  const worker = useTestWorker(api, { metrics: { port: 0 } });
  let prometheus: ChildProcess | undefined;
  let dir = "";
  afterAll(async () => {
    prometheus?.kill("SIGKILL");
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function query(base: string, expression: string): Promise<number> {
    const response = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(expression)}`).catch(() => undefined);
    if (!response?.ok) return Number.NaN;
    const body = (await response.json()) as { data: { result: { value: [number, string] }[] } };
    return Number(body.data.result[0]?.value[1] ?? Number.NaN);
  }

  it("sees a send in the API's and the worker's counters through its HTTP API", async () => {
    dir = await mkdtemp(path.join(tmpdir(), "parley-prometheus-"));
    const apiTarget = new URL(api.baseUrl).host;
    const workerTarget = `127.0.0.1:${worker.worker.metricsPort}`;
    const config = [
      "global:",
      "  scrape_interval: 1s",
      "scrape_configs:",
      "  - job_name: parley-api",
      "    authorization:",
      `      credentials: ${TOKEN}`,
      "    static_configs:",
      `      - targets: ["${apiTarget}"]`,
      "  - job_name: parley-worker",
      "    static_configs:",
      `      - targets: ["${workerTarget}"]`,
      "",
    ].join("\n");
    await writeFile(path.join(dir, "prometheus.yml"), config);
    const port = await findFreePort();
    prometheus = spawn(
      PROMETHEUS,
      [
        `--config.file=${path.join(dir, "prometheus.yml")}`,
        `--storage.tsdb.path=${path.join(dir, "data")}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: "ignore" },
    );
    const base = `http://127.0.0.1:${port}`;

    const org = await createTestOrganization(api);
    const client = as(api, org.test);
    const conversation = await sendableConversation(client, "whatsapp");
    await sendText(client, conversation.id, "Hello from the scrape test");

    const expressions = [
      'sum(up{job="parley-api"})',
      'sum(up{job="parley-worker"})',
      'sum(parley_messages_accepted_total{job="parley-api",channel_type="whatsapp"})',
      'sum(parley_messages_total{job="parley-worker",channel_type="whatsapp",status="sent"})',
      'sum(parley_http_requests_total{job="parley-api",route="/v1/messages",method="POST",status="201"})',
    ];
    const values = await eventually(
      () => Promise.all(expressions.map((expression) => query(base, expression))),
      (found) => found.every((value) => value >= 1),
      60_000,
    );
    expect(values).toEqual([1, 1, 1, 1, 1]);
  }, 90_000);

  it("accepts the example alert rules of docs/prometheus/alerts.yml (promtool check rules)", () => {
    const rules = path.resolve(import.meta.dirname, "../../../docs/prometheus/alerts.yml");
    const output = execFileSync(path.join(path.dirname(PROMETHEUS), "promtool"), ["check", "rules", rules], {
      encoding: "utf8",
    });
    expect(output).toMatch(/SUCCESS: \d+ rules found/);
  });
});
