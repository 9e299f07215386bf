import { sendRawEmail } from "@parley/channels/testing";
import { describe, expect, it } from "vitest";
import { sendableConversation, sendText, waitForStatus } from "./delivery-helpers.js";
import {
  connectEmailChannel,
  customerAddress,
  deliverOverSmtp,
  fakeDns,
  newMessageId,
  rawEmail,
} from "./email-helpers.js";
import { as, createTestOrganization, eventually, useTestApi, useTestWorker } from "./harness.js";
import { useWebhookReceiver, waitForRequests } from "./webhook-receiver.js";

/**
 * Looks like an id, a key or a random text: a prefixed id (its ULID or secret has capitals or
 * digits; a label's lower-case words such as `bad_signature` are not one), a long token, many digits.
 */
const ID_LIKE = /[a-z]+_(?=[0-9a-z]*[0-9A-Z])[0-9A-Za-z]{8,}|[0-9A-Za-z_-]{24,}|\d{8,}|[0-9a-f]{8}-[0-9a-f]{4}/;

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
  const worker = useTestWorker(api, {
    metrics: { port: 0 },
    smtpInbound: { port: 0, host: "127.0.0.1", emailAuthentication: { resolver: fakeDns() } },
  });
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

  it("counts receipts (delivered, read), inbound emails by result and the database pool, with bounded labels", async () => {
    const port = worker.worker.metricsPort;
    const org = await createTestOrganization(api);
    const client = as(api, org.test);
    const conversation = await sendableConversation(client, "whatsapp");
    const read = await sendText(client, conversation.id, "[sandbox:read] Read me, never a label");
    await waitForStatus(api, client, read.id, "read");

    const mailbox = customerAddress("support");
    const channel = await connectEmailChannel(api, org.id, mailbox, "smtp://127.0.0.1:1");
    const sender = customerAddress("customer");
    const raw = rawEmail({ from: sender, to: mailbox, subject: "Where is it", messageId: newMessageId(), text: "Hi" });
    await deliverOverSmtp(worker, { from: sender, to: mailbox }, raw);
    await deliverOverSmtp(worker, { from: sender, to: mailbox }, raw);
    const nobody = customerAddress("nobody");
    const refused = await sendRawEmail(
      { host: "127.0.0.1", port: worker.worker.smtpPort ?? 0 },
      {
        from: sender,
        to: nobody,
        raw: rawEmail({ from: sender, to: nobody, subject: "x", messageId: newMessageId(), text: "x" }),
      },
    ).then(
      () => "accepted",
      (error: Error) => error.message,
    );
    expect(refused).toMatch(/550/);

    const scrape = async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const text = await eventually(scrape, (body) =>
      /^parley_messages_total\{channel_type="whatsapp",status="read",error_code="none"\} [1-9]/m.test(body),
    );
    expect(text).toMatch(
      /^parley_messages_total\{channel_type="whatsapp",status="delivered",error_code="none"\} [1-9]/m,
    );
    expect(text).toMatch(/^parley_inbound_emails_total\{result="accepted"\} 1$/m);
    expect(text).toMatch(/^parley_inbound_emails_total\{result="duplicate"\} 1$/m);
    expect(text).toMatch(/^parley_inbound_emails_total\{result="unknown_recipient"\} 1$/m);
    expect(text).toMatch(/^parley_db_pool_size 10$/m);
    expect(text).toMatch(/^parley_db_pool_in_use \d+$/m);
    expect(text).toMatch(/^parley_db_pool_waiting 0$/m);

    const forbidden = [org.id, org.test, conversation.id, read.id, channel.id, mailbox, sender, nobody, "Read me"];
    for (const name of ["parley_messages_total", "parley_inbound_emails_total"]) {
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
