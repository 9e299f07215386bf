import { SpanStatusCode } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace";
import { whatsappTextMessage } from "@parley/channels/testing";
import { startTracing, type Tracing } from "@parley/tracing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitForStatus } from "./delivery-helpers.js";
import { connectEmailChannel, customerAddress, useSmtpSink } from "./email-helpers.js";
import { eventually, setupOrganization, useTestApi, useTestWorker } from "./harness.js";
import {
  connectMetaChannel,
  deliverWebhook,
  randomSecret,
  useMetaSimulator,
  waId,
  waitForInbound,
} from "./meta-helpers.js";
import { header, useWebhookReceiver } from "./webhook-receiver.js";

/**
 * OpenTelemetry tracing with the SDK's in-memory exporter, through the real API and
 * worker in this process (its own database), a live WhatsApp channel on the Graph API
 * simulator and a real webhook receiver: a send's trace holds its request, its delivery
 * job, the provider call and the webhook attempt.
 */
const exporter = new InMemorySpanExporter();
let tracing: Tracing | undefined;
beforeAll(async () => {
  tracing = await startTracing({ OTEL_SDK_DISABLED: false }, { defaultServiceName: "parley-api", exporter });
});
afterAll(() => tracing?.shutdown());

const meta = useMetaSimulator();
const relay = useSmtpSink();
const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "100000" }, { ownDatabase: true });
useTestWorker(api, () => ({ meta: meta.simulator.options(), webhookFastRetry: true }));
const receiver = useWebhookReceiver();

const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/;

function spansOf(traceId: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((span) => span.spanContext().traceId === traceId);
}

function only(spans: ReadableSpan[], name: string, where: (span: ReadableSpan) => boolean = () => true) {
  const found = spans.filter((span) => span.name === name && where(span));
  expect(
    found.map((span) => span.name),
    `one span named ${name}`,
  ).toHaveLength(1);
  return found[0] as ReadableSpan;
}

/** The span ends when the response has been handed over: the client may have it a moment before. */
async function finished(name: string, where: (span: ReadableSpan) => boolean) {
  await eventually(
    async () => exporter.getFinishedSpans().filter((span) => span.name === name && where(span)),
    (found) => found.length > 0,
  );
  return only(exporter.getFinishedSpans(), name, where);
}

function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}

/** A live WhatsApp conversation whose customer has just written (its session window is open). */
async function whatsappConversation() {
  const { org, live } = await setupOrganization(api);
  const channel = await connectMetaChannel(api, meta.simulator, org.id, "whatsapp");
  const id = `wamid.${randomSecret("in")}`;
  const customer = waId();
  await deliverWebhook(
    api,
    whatsappTextMessage({ phoneNumberId: channel.accountId, from: customer, name: "Grace", id, text: "Hi" }),
    channel.appSecret,
  );
  const inbound = await waitForInbound(api, live, id);
  return { org, live, channel, conversationId: inbound.conversation_id as string };
}

describe("tracing", () => {
  it("puts a send's request, delivery job, Graph API call and webhook attempt in one trace", async () => {
    const { live, channel, conversationId } = await whatsappConversation();
    // A receiver URL with a token in its path and query: the receiver answers 404 (a path it does not know).
    const hook = receiver.endpoint();
    const url = `${hook.url}/hook-path-secret?token=hook-query-secret`;
    const subscribed = await live.post("/webhooks", { body: { url, events: ["message.sent"] } });
    expect(subscribed.status, JSON.stringify(subscribed.body)).toBe(201);

    const text = "Your order 4711 ships tomorrow";
    const response = await live.post("/messages", { body: { conversation_id: conversationId, type: "text", text } });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    const messageId = response.body.id as string;
    await waitForStatus(api, live, messageId, "sent");

    const request = await finished(
      "POST /v1/messages",
      (span) => span.attributes["parley.request_id"] === response.headers.get("x-parley-request-id"),
    );
    const traceId = request.spanContext().traceId;
    const spans = await eventually(
      async () => spansOf(traceId),
      (found) => found.some((span) => span.name === "webhook attempt"),
      15_000,
    );
    expect(request.attributes).toMatchObject({
      "http.request.method": "POST",
      "http.route": "/v1/messages",
      "http.response.status_code": 201,
    });
    expect(request.resource.attributes["service.name"]).toBe("parley-api");

    // The job continues the request's trace through the outbox row's traceparent.
    const job = only(spans, "job deliver_message");
    expect(parentOf(job)).toBe(request.spanContext().spanId);
    expect(job.attributes["parley.job.task"]).toBe("deliver_message");
    const graph = only(spans, "Graph API POST");
    expect(parentOf(graph)).toBe(job.spanContext().spanId);
    expect(graph.attributes).toMatchObject({ "http.request.method": "POST", "server.address": "127.0.0.1" });
    // The Graph API call carries the trace on (W3C traceparent): a provider that traces joins it.
    const graphRequest = meta.simulator.requests.find(
      (recorded) => recorded.method === "POST" && recorded.path.endsWith(`/${channel.accountId}/messages`),
    );
    expect(graphRequest?.headers.traceparent).toBe(`00-${traceId}-${graph.spanContext().spanId}-01`);
    // message.sent, recorded by the job, carries its traceparent: the attempt continues it.
    const attempt = only(spans, "webhook attempt", (span) => span.attributes["parley.webhook.attempt"] === 1);
    expect(parentOf(attempt)).toBe(job.spanContext().spanId);
    expect(attempt.attributes).toMatchObject({
      "parley.event_type": "message.sent",
      "parley.webhook.attempt": 1,
      "http.response.status_code": 404,
      "server.address": "127.0.0.1",
    });
    expect(attempt.status).toEqual({ code: SpanStatusCode.ERROR, message: "status_404" });
    // The webhook POST carries the attempt's span as its traceparent: a receiver that traces joins the trace.
    const received = receiver.strays.find((stray) => stray.path.startsWith(`${hook.path}/hook-path-secret`));
    expect(received && header(received, "traceparent")).toBe(`00-${traceId}-${attempt.spanContext().spanId}-01`);
    // The deliver_webhook job has a trace of its own, linked from the attempt.
    const webhookJob = await finished("job deliver_webhook", (span) =>
      attempt.links.some((link) => link.context.spanId === span.spanContext().spanId),
    );
    expect(webhookJob.spanContext().traceId).not.toBe(traceId);

    // Never recorded: a message's text, a token or secret, a URL's query or path, an id in a name.
    const recorded = JSON.stringify(
      spans.map((span) => ({ name: span.name, attributes: span.attributes, status: span.status })),
    );
    for (const secret of [
      text,
      channel.accessToken,
      channel.appSecret,
      "hook-query-secret",
      "hook-path-secret",
      "4711",
    ]) {
      expect(recorded).not.toContain(secret);
    }
    for (const span of spans) expect(span.name).not.toMatch(/msg_|conv_|ch_|\d{6,}/);
  });

  it("continues a caller's trace through an email send: request, delivery job and SMTP send", async () => {
    const { org, live } = await setupOrganization(api);
    expect(relay.sink.url).toContain("user:pass@");
    const channel = await connectEmailChannel(api, org.id, "support@acme.test", relay.sink.url);
    const address = customerAddress("kim");
    const contact = await live.post("/contacts", { body: { name: "Kim Lee", email: address } });
    expect(contact.status).toBe(201);
    const started = await live.post("/conversations", {
      body: { contact_id: contact.body.id, channel_id: channel.id, metadata: { subject: "Order 9182" } },
    });
    expect(started.status, JSON.stringify(started.body)).toBe(201);

    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const callerSpanId = "b7ad6b7169203331";
    const text = "Your parcel is at the front desk";
    const sent = await live.post("/messages", {
      body: { conversation_id: started.body.id, type: "text", text },
      headers: { traceparent: `00-${traceId}-${callerSpanId}-01` },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    await waitForStatus(api, live, sent.body.id, "sent");

    const request = await finished("POST /v1/messages", (span) => span.spanContext().traceId === traceId);
    expect(parentOf(request)).toBe(callerSpanId);
    const job = await finished("job deliver_message", (span) => span.spanContext().traceId === traceId);
    expect(parentOf(job)).toBe(request.spanContext().spanId);
    const smtp = only(spansOf(traceId), "SMTP send");
    expect(parentOf(smtp)).toBe(job.spanContext().spanId);
    expect(smtp.attributes).toEqual({ "server.address": "127.0.0.1" });

    const recorded = JSON.stringify(spansOf(traceId).map((span) => [span.name, span.attributes, span.status]));
    for (const secret of [text, address, "Kim Lee", "Order 9182", "user:pass", "support@acme.test"]) {
      expect(recorded).not.toContain(secret);
    }
  });

  it("continues the caller's trace from its traceparent header, and names the span by its route template", async () => {
    const { client } = await setupOrganization(api);
    const created = await client.post("/contacts", { body: { name: "Ada" } });
    expect(created.status).toBe(201);
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const callerSpanId = "00f067aa0ba902b7";
    const response = await client.get(`/contacts/${created.body.id}`, {
      headers: { traceparent: `00-${traceId}-${callerSpanId}-01` },
    });
    expect(response.status).toBe(200);
    const span = await finished("GET /v1/contacts/:contact_id", (found) => found.spanContext().traceId === traceId);
    expect(parentOf(span)).toBe(callerSpanId);
    expect(span.attributes).toMatchObject({
      "http.route": "/v1/contacts/:contact_id",
      "http.response.status_code": 200,
      "parley.request_id": response.headers.get("x-parley-request-id"),
    });
    expect(JSON.stringify(span.attributes)).not.toContain(created.body.id);
  });

  it("stores the request's traceparent with the outbox row and the event it writes", async () => {
    const { client } = await setupOrganization(api);
    const created = await client.post("/contacts", { body: { name: "Grace" } });
    expect(created.status).toBe(201);
    const [event] = await api.client.sql<{ traceparent: string | null }[]>`
      select traceparent from events where type = 'contact.created' and data->'contact'->>'id' = ${created.body.id}`;
    expect(event?.traceparent).toMatch(TRACEPARENT);
    const request = await finished(
      "POST /v1/contacts",
      (span) => span.attributes["parley.request_id"] === created.headers.get("x-parley-request-id"),
    );
    expect(event?.traceparent).toContain(request.spanContext().spanId);
  });
});
