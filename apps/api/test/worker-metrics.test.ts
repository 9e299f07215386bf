import { describe, expect, it } from "vitest";
import { sendableConversation, sendText } from "./delivery-helpers.js";
import { as, createTestOrganization, eventually, useTestApi, useTestWorker } from "./harness.js";
import { useWebhookReceiver, waitForRequests } from "./webhook-receiver.js";

/** Looks like an id, a key or a random text: a prefixed id, a long token, many digits. */
const ID_LIKE = /[a-z]+_[0-9A-Za-z]{8,}|[0-9A-Za-z_-]{24,}|\d{8,}|[0-9a-f]{8}-[0-9a-f]{4}/;

function labelsOf(text: string, name: string): Record<string, string>[] {
  const found: Record<string, string>[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    const labels: Record<string, string> = {};
    for (const pair of line.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1] as string] = pair[2] as string;
    found.push(labels);
  }
  return found;
}

describe("the worker's GET /metrics (WORKER_METRICS_PORT)", () => {
  const api = useTestApi({}, { ownDatabase: true });
  const worker = useTestWorker(api, { metrics: { port: 0 } });
  const receiver = useWebhookReceiver();

  it("counts sends, webhook attempts and jobs by task, with bounded labels that carry no id", async () => {
    const port = worker.worker.metricsPort;
    expect(port).toBeGreaterThan(0);
    const org = await createTestOrganization(api);
    const client = as(api, org.test);
    const target = receiver.endpoint();
    const subscribed = await client.post("/webhooks", { body: { url: target.url, events: ["message.sent"] } });
    expect(subscribed.status, JSON.stringify(subscribed.body)).toBe(201);
    const conversation = await sendableConversation(client, "whatsapp");
    const sent = await sendText(client, conversation.id, "Never a label");
    await waitForRequests(target, 1);

    const scrape = async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const text = await eventually(scrape, (body) =>
      /^parley_webhook_attempts_total\{outcome="succeeded"\} [1-9]/m.test(body),
    );
    expect(text).toMatch(/^parley_messages_total\{channel_type="whatsapp",status="sent",error_code="none"\} 1$/m);
    expect(text).toMatch(/^parley_webhook_attempt_duration_seconds_count\{outcome="succeeded"\} [1-9]/m);
    expect(text).toMatch(/^parley_jobs\{task="deliver_message",state="queued"\} \d+$/m);
    expect(text).toMatch(/^process_resident_memory_bytes /m);
    expect((await fetch(`http://127.0.0.1:${port}/other`)).status).toBe(404);

    const forbidden = [org.id, org.test, conversation.id, sent.id, "Never a label", target.url];
    for (const name of ["parley_messages_total", "parley_webhook_attempts_total", "parley_jobs"]) {
      const series = labelsOf(text, name);
      expect(series.length).toBeLessThan(40);
      for (const labels of series) {
        for (const value of Object.values(labels)) {
          expect(value).not.toMatch(ID_LIKE);
          for (const secret of forbidden) expect(value.includes(secret)).toBe(false);
        }
      }
    }
  });
});
