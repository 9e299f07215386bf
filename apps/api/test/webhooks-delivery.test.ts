import { setTimeout as sleep } from "node:timers/promises";
import { newId } from "@parley/db";
import { NoMatchingSignatureError, verifySignature } from "@parley/webhook-verify";
import { describe, expect, it } from "vitest";
import { as, createTestOrganization, eventually, useTestApi, useTestWorker } from "./harness.js";
import {
  answer,
  header,
  type ReceivedWebhook,
  type ReceiverEndpoint,
  type Responder,
  useWebhookReceiver,
  waitForRequests,
} from "./webhook-receiver.js";

/**
 * Webhooks delivered by the real worker (relay, deliver_webhook) in this process, on this
 * file's own database, to a real HTTP receiver on 127.0.0.1, with the fast retry schedule
 * (decisions.md: `PARLEY_WEBHOOK_FAST_RETRY=1`, as many seconds as each step has minutes).
 */
const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "100000" }, { ownDatabase: true });
useTestWorker(api, { webhookFastRetry: true });
const receiver = useWebhookReceiver();

type Client = ReturnType<typeof as>;

const DELIVERY_ID = /^whd_[0-9A-HJKMNP-TV-Z]{26}$/;
const SIGNATURE = /^t=(\d+)(,v1=[0-9a-f]{64})+$/;
const ENVELOPE_FIELDS = ["created_at", "data", "environment", "id", "organization_id", "type"];
/** The fast schedule's first step: 5 s -> 1 s (at least 1 s), with up to 20 % jitter. */
const FIRST_FAST_RETRY_MS = { min: 1_000, max: 1_200 };
/**
 * The one fixed wait of these tests, only to show that nothing MORE arrives: every
 * (event, endpoint) job is added by one statement, so once a witness endpoint has its
 * request the others' jobs exist too; a short wait lets any of them run.
 */
const NOTHING_MORE_MS = 300;

async function setup() {
  const org = await createTestOrganization(api);
  return { org, client: as(api, org.test), live: as(api, org.live) };
}

async function subscribe(client: Client, target: ReceiverEndpoint, body: Record<string, unknown> = {}) {
  const response = await client.post("/webhooks", {
    body: { url: target.url, events: ["contact.created"], ...body },
  });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

async function createContact(client: Client, name = "Ada") {
  const response = await client.post("/contacts", { body: { name } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

/** The recorded event of `type` about the contact, as GET /events/{id} answers it. */
async function eventAbout(client: Client, contactId: string, type: string) {
  const list = await client.get("/events", { query: { type, limit: 100 } });
  const found = list.body.data.find((event: any) => event.data.contact?.id === contactId);
  expect(found, `${type} event of ${contactId}`).toBeDefined();
  const response = await client.get(`/events/${found.id}`);
  expect(response.status).toBe(200);
  return response.body;
}

async function deliveries(client: Client, endpointId: string) {
  const response = await client.get(`/webhooks/${endpointId}/deliveries`, { query: { limit: 100 } });
  expect(response.status).toBe(200);
  return response.body.data as any[];
}

async function waitForDeliveries(client: Client, endpointId: string, count = 1, timeoutMs = 10_000) {
  return eventually(
    () => deliveries(client, endpointId),
    (list) => list.length >= count,
    timeoutMs,
  );
}

/** deliver_webhook jobs (pending or in hand) for the endpoint. */
async function jobsFor(endpointId: string) {
  return api.client.sql<{ id: string; run_at: Date }[]>`
    select jobs.id::text, jobs.run_at from graphile_worker._private_jobs as jobs
    where jobs.payload->>'endpoint_id' = ${endpointId}`;
}

async function getEndpoint(client: Client, id: string) {
  const response = await client.get(`/webhooks/${id}`);
  expect(response.status).toBe(200);
  return response.body;
}

function signatureParts(request: ReceivedWebhook) {
  const value = header(request, "x-parley-signature");
  expect(value).toMatch(SIGNATURE);
  const parts = value.split(",");
  return {
    timestamp: Number(parts[0]?.slice("t=".length)),
    signatures: parts.slice(1).map((part) => part.slice("v1=".length)),
  };
}

/** The envelope is the recorded event without its `object`. */
function envelopeOf(event: Record<string, unknown>) {
  const { object: _, ...envelope } = event;
  return envelope;
}

/** Proves that nothing more arrives at `target` (see NOTHING_MORE_MS). */
async function expectNothingMore(client: Client, target: ReceiverEndpoint, endpointId: string, count = 0) {
  await sleep(NOTHING_MORE_MS);
  expect(target.received).toHaveLength(count);
  expect(await deliveries(client, endpointId)).toHaveLength(count);
  expect(await jobsFor(endpointId)).toEqual([]);
}

const failFirstThenOk =
  (status: number, body: string): Responder =>
  (_, index) =>
    index === 0 ? { status, body } : { status: 200, body: "ok" };

describe("a delivery over HTTP", () => {
  it("POSTs the recorded event's envelope with the four X-Parley headers, signed with the create-time secret", async () => {
    const { client, org } = await setup();
    const target = receiver.endpoint();
    const endpoint = await subscribe(client, target);

    const contact = await createContact(client);

    const [request] = await waitForRequests(target);
    if (!request) throw new Error("no request");
    const event = await eventAbout(client, contact.id, "contact.created");
    expect(request.method).toBe("POST");
    expect(Object.keys(request.envelope).sort()).toEqual(ENVELOPE_FIELDS);
    expect(request.envelope).toEqual(envelopeOf(event));
    expect(request.envelope).toMatchObject({
      type: "contact.created",
      environment: "test",
      organization_id: org.id,
      data: { contact },
    });
    expect(header(request, "content-type")).toMatch(/^application\/json/);
    expect(header(request, "x-parley-event")).toBe("contact.created");
    expect(header(request, "x-parley-delivery")).toMatch(DELIVERY_ID);
    expect(header(request, "x-parley-timestamp")).toMatch(/^\d+$/);
    // Tracing is off in this file: no trace context leaves with the POST.
    expect(header(request, "traceparent")).toBe("");
    const { timestamp, signatures } = signatureParts(request);
    expect(signatures).toHaveLength(1);
    expect(Number(header(request, "x-parley-timestamp"))).toBe(timestamp);
    expect(Math.abs(timestamp - Date.now() / 1000)).toBeLessThan(60);
    await expect(
      verifySignature(request.body, header(request, "x-parley-signature"), endpoint.secret),
    ).resolves.toBeUndefined();
    await expect(
      verifySignature(request.body, header(request, "x-parley-signature"), `${endpoint.secret}x`),
    ).rejects.toBeInstanceOf(NoMatchingSignatureError);
  });

  it("records the successful attempt, listed by GET /webhooks/{id}/deliveries", async () => {
    const { client } = await setup();
    const target = receiver.endpoint(answer(200, "thanks"));
    const endpoint = await subscribe(client, target);

    await createContact(client);

    const [request] = await waitForRequests(target);
    const [delivery] = await waitForDeliveries(client, endpoint.id);
    expect(delivery).toEqual({
      object: "webhook_delivery",
      id: header(request as ReceivedWebhook, "x-parley-delivery"),
      endpoint_id: endpoint.id,
      event_id: request?.envelope.id,
      event_type: "contact.created",
      attempt: 1,
      status: "succeeded",
      response_status: 200,
      duration_ms: expect.any(Number),
      response_body: "thanks",
      error: null,
      next_retry_at: null,
      created_at: expect.any(String),
    });
    expect((await getEndpoint(client, endpoint.id)).failure_count).toBe(0);
  });

  it("takes any 2xx for success and sends nothing more", async () => {
    const { client } = await setup();
    const target = receiver.endpoint(answer(204));
    const endpoint = await subscribe(client, target);

    await createContact(client);

    const [delivery] = await waitForDeliveries(client, endpoint.id);
    expect(delivery).toMatchObject({
      status: "succeeded",
      response_status: 204,
      response_body: null,
      next_retry_at: null,
    });
    await expectNothingMore(client, target, endpoint.id, 1);
  });

  it("after a 500 sends the same event again with a new delivery id; both attempts are listed", async () => {
    const { client } = await setup();
    const failure = `boom: database down ${"x".repeat(3_000)}`;
    const target = receiver.endpoint(failFirstThenOk(500, failure));
    const endpoint = await subscribe(client, target);

    await createContact(client);

    const [first, second] = await waitForRequests(target, 2, 15_000);
    if (!first || !second) throw new Error("two requests expected");
    expect(second.body).toBe(first.body);
    expect(second.envelope.id).toBe(first.envelope.id);
    expect(header(second, "x-parley-delivery")).not.toBe(header(first, "x-parley-delivery"));
    expect(second.receivedAt - first.receivedAt).toBeGreaterThanOrEqual(FIRST_FAST_RETRY_MS.min - 50);
    for (const request of [first, second]) {
      await verifySignature(request.body, header(request, "x-parley-signature"), endpoint.secret);
    }
    const listed = await eventually(
      () => deliveries(client, endpoint.id),
      (list) => list[0]?.status === "succeeded",
    );
    expect(listed).toEqual([
      expect.objectContaining({
        id: header(second, "x-parley-delivery"),
        event_id: first.envelope.id,
        attempt: 2,
        status: "succeeded",
        response_status: 200,
        error: null,
        next_retry_at: null,
      }),
      expect.objectContaining({
        id: header(first, "x-parley-delivery"),
        event_id: first.envelope.id,
        event_type: "contact.created",
        attempt: 1,
        status: "failed",
        response_status: 500,
        response_body: failure.slice(0, 1024),
        error: expect.stringContaining("500"),
        next_retry_at: expect.any(String),
      }),
    ]);
    const failed = listed[1];
    const wait = Date.parse(failed.next_retry_at) - Date.parse(failed.created_at);
    expect(wait).toBeGreaterThanOrEqual(FIRST_FAST_RETRY_MS.min);
    expect(wait).toBeLessThanOrEqual(FIRST_FAST_RETRY_MS.max);
    // The success ended the failure streak the first attempt had started.
    expect((await getEndpoint(client, endpoint.id)).failure_count).toBe(0);
  });

  // Events relayed together go to an endpoint as one job that sends them one after
  // another (attemptWebhookBatch); a failed one stops it and the rest go out on their own.
  it("sends events recorded together in order; one that fails holds back none of the others", async () => {
    const { org, client } = await setup();
    const target = receiver.endpoint((_request, index) => (index === 1 ? { status: 500 } : { status: 200 }));
    const endpoint = await subscribe(client, target);
    const eventIds = Array.from({ length: 6 }, () => newId("event"));
    await api.client.sql.begin(async (sql) => {
      for (const id of eventIds) {
        await sql`insert into events (id, organization_id, environment, type, data)
          values (${id}, ${org.id}, 'test', 'contact.created', ${JSON.stringify({ contact: { id: "cnt_x", name: "Bulk" } })}::jsonb)`;
        await sql`insert into event_outbox (event_id) values (${id})`;
      }
    });

    const requests = await waitForRequests(target, eventIds.length + 1, 15_000);
    // The first two in order (the second failed); then every event, the failed one again.
    expect(requests.slice(0, 2).map((request) => request.envelope.id)).toEqual(eventIds.slice(0, 2));
    expect(new Set(requests.map((request) => request.envelope.id))).toEqual(new Set(eventIds));
    const listed = await eventually(
      () => deliveries(client, endpoint.id),
      (list) => list.filter((delivery) => delivery.status === "succeeded").length === eventIds.length,
    );
    const attemptsOf = (eventId: string) =>
      listed
        .filter((delivery) => delivery.event_id === eventId)
        .map((delivery) => [delivery.attempt, delivery.status])
        .sort();
    expect(attemptsOf(eventIds[1] as string)).toEqual([
      [1, "failed"],
      [2, "succeeded"],
    ]);
    for (const id of [eventIds[0], ...eventIds.slice(2)]) expect(attemptsOf(id as string)).toEqual([[1, "succeeded"]]);
    await expectNothingMore(client, target, endpoint.id, eventIds.length + 1);
  });

  it("a batch that succeeds, then fails, leaves a streak of one failed event, begun by that failure", async () => {
    const { org, client } = await setup();
    const target = receiver.endpoint((_request, index) => (index === 0 ? { status: 200 } : { status: 500 }));
    const endpoint = await subscribe(client, target);
    // A streak from before: the batch's success ends it, its failure starts another.
    await api.client.sql`
      update webhook_endpoints set failure_count = 5, first_failure_at = now() - interval '2 days'
      where id = ${endpoint.id}`;
    const eventIds = [newId("event"), newId("event")];
    await api.client.sql.begin(async (sql) => {
      for (const id of eventIds) {
        await sql`insert into events (id, organization_id, environment, type, data)
          values (${id}, ${org.id}, 'test', 'contact.created', ${JSON.stringify({ contact: { id: "cnt_x", name: "Pair" } })}::jsonb)`;
        await sql`insert into event_outbox (event_id) values (${id})`;
      }
    });

    const listed = await waitForDeliveries(client, endpoint.id, 2);
    const failed = listed.find((delivery: Record<string, any>) => delivery.status === "failed");
    expect(failed).toMatchObject({ event_id: eventIds[1], attempt: 1 });
    const [streak] = await api.client.sql<{ failure_count: number; first_failure_at: string; enabled: boolean }[]>`
      select failure_count, first_failure_at, enabled from webhook_endpoints where id = ${endpoint.id}`;
    expect(streak).toMatchObject({ failure_count: 1, enabled: true });
    expect(new Date(streak?.first_failure_at ?? 0).toISOString()).toBe(failed.created_at);
    await client.patch(`/webhooks/${endpoint.id}`, { body: { enabled: false } });
  });

  it("counts a 302 as a failure and does not follow it", async () => {
    const { client } = await setup();
    const target = receiver.endpoint(() => ({
      status: 302,
      body: "moved",
      headers: { location: `${target.url}/moved` },
    }));
    const endpoint = await subscribe(client, target);

    await createContact(client);

    const [delivery] = await waitForDeliveries(client, endpoint.id);
    expect(delivery).toMatchObject({
      attempt: 1,
      status: "failed",
      response_status: 302,
      error: expect.stringContaining("302"),
      next_retry_at: expect.any(String),
    });
    expect(receiver.strays.filter((request) => request.path.startsWith(target.path))).toEqual([]);
    expect(target.received).toHaveLength(1);
    expect((await getEndpoint(client, endpoint.id)).failure_count).toBe(1);
  });
});

describe("who receives what", () => {
  it("an event type the endpoint did not subscribe to is not delivered", async () => {
    const { client } = await setup();
    const updatesOnly = receiver.endpoint();
    const witness = receiver.endpoint();
    const endpoint = await subscribe(client, updatesOnly, { events: ["contact.updated"] });
    await subscribe(client, witness, { events: ["contact.created"] });

    const contact = await createContact(client);
    await waitForRequests(witness);
    await expectNothingMore(client, updatesOnly, endpoint.id);

    await client.patch(`/contacts/${contact.id}`, { body: { name: "Ada Lovelace" } });
    const [request] = await waitForRequests(updatesOnly);
    expect(request?.envelope).toMatchObject({ type: "contact.updated", data: { contact: { id: contact.id } } });
  });

  it("`*` receives every type", async () => {
    const { client } = await setup();
    const target = receiver.endpoint();
    await subscribe(client, target, { events: ["*"] });

    const contact = await createContact(client);
    await client.patch(`/contacts/${contact.id}`, { body: { name: "Ada Lovelace" } });

    const received = await waitForRequests(target, 2);
    expect(received.map((request) => request.envelope.type).sort()).toEqual(["contact.created", "contact.updated"]);
  });

  it("a disabled endpoint gets nothing", async () => {
    const { client } = await setup();
    const disabled = receiver.endpoint();
    const witness = receiver.endpoint();
    const endpoint = await subscribe(client, disabled, { enabled: false });
    await subscribe(client, witness);

    await createContact(client);

    await waitForRequests(witness);
    await expectNothingMore(client, disabled, endpoint.id);
  });

  it("an endpoint disabled by PATCH gets nothing more", async () => {
    const { client } = await setup();
    const target = receiver.endpoint();
    const witness = receiver.endpoint();
    const endpoint = await subscribe(client, target);
    await subscribe(client, witness);
    await createContact(client, "Before");
    await waitForRequests(target);

    await client.patch(`/webhooks/${endpoint.id}`, { body: { enabled: false } });
    await createContact(client, "After");

    await waitForRequests(witness, 2);
    await expectNothingMore(client, target, endpoint.id, 1);
  });

  it("a test-key event never reaches a live-key endpoint, and a live one never a test endpoint", async () => {
    const { client, live } = await setup();
    const other = await setup();
    const testTarget = receiver.endpoint();
    const liveTarget = receiver.endpoint();
    const otherTarget = receiver.endpoint();
    const testEndpoint = await subscribe(client, testTarget);
    const liveEndpoint = await subscribe(live, liveTarget);
    const otherEndpoint = await subscribe(other.client, otherTarget, { events: ["*"] });

    const testContact = await createContact(client, "Sandbox");
    const liveContact = await createContact(live, "Real");

    await waitForRequests(testTarget);
    await waitForRequests(liveTarget);
    await expectNothingMore(client, testTarget, testEndpoint.id, 1);
    await expectNothingMore(live, liveTarget, liveEndpoint.id, 1);
    await expectNothingMore(other.client, otherTarget, otherEndpoint.id, 0);
    expect(testTarget.received[0]?.envelope).toMatchObject({
      environment: "test",
      data: { contact: { id: testContact.id } },
    });
    expect(liveTarget.received[0]?.envelope).toMatchObject({
      environment: "live",
      data: { contact: { id: liveContact.id } },
    });
  });
});

describe("secret rotation", () => {
  it("signs with the old and the new secret for 24 hours, then with the new one only", async () => {
    const { client } = await setup();
    const target = receiver.endpoint();
    const endpoint = await subscribe(client, target);
    const rotated = await client.post(`/webhooks/${endpoint.id}/rotate-secret`);
    expect(rotated.status).toBe(200);

    await createContact(client, "During");

    const [during] = await waitForRequests(target);
    if (!during) throw new Error("no request");
    expect(signatureParts(during).signatures).toHaveLength(2);
    for (const secret of [endpoint.secret, rotated.body.secret]) {
      await expect(verifySignature(during.body, header(during, "x-parley-signature"), secret)).resolves.toBeUndefined();
    }

    // 24 hours later: the old secret has expired.
    await api.client.sql`
      update webhook_endpoints set previous_secret_expires_at = now() - interval '1 second' where id = ${endpoint.id}`;
    await createContact(client, "After");

    const [, after] = await waitForRequests(target, 2);
    if (!after) throw new Error("no second request");
    expect(signatureParts(after).signatures).toHaveLength(1);
    await verifySignature(after.body, header(after, "x-parley-signature"), rotated.body.secret);
    await expect(
      verifySignature(after.body, header(after, "x-parley-signature"), endpoint.secret),
    ).rejects.toBeInstanceOf(NoMatchingSignatureError);
  });
});

describe("deliveries by hand", () => {
  it("POST /webhooks/{id}/test sends a signed webhook.test and answers the attempt", async () => {
    const { client, org } = await setup();
    const target = receiver.endpoint();
    const endpoint = await subscribe(client, target);

    const response = await client.post(`/webhooks/${endpoint.id}/test`);

    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      object: "webhook_delivery",
      endpoint_id: endpoint.id,
      event_type: "webhook.test",
      attempt: 1,
      status: "succeeded",
      response_status: 200,
      next_retry_at: null,
    });
    expect(target.received).toHaveLength(1);
    const [request] = target.received;
    if (!request) throw new Error("no request");
    expect(header(request, "x-parley-event")).toBe("webhook.test");
    expect(header(request, "x-parley-delivery")).toBe(response.body.id);
    expect(request.envelope).toMatchObject({
      id: response.body.event_id,
      type: "webhook.test",
      environment: "test",
      organization_id: org.id,
    });
    await verifySignature(request.body, header(request, "x-parley-signature"), endpoint.secret);
    expect(request.envelope).toEqual(envelopeOf((await client.get(`/events/${response.body.event_id}`)).body));
    expect(await deliveries(client, endpoint.id)).toEqual([response.body]);
  });

  it("a failed test event is not retried", async () => {
    const { client } = await setup();
    const target = receiver.endpoint(answer(500, "no"));
    const endpoint = await subscribe(client, target);

    const response = await client.post(`/webhooks/${endpoint.id}/test`);

    expect(response.body).toMatchObject({ status: "failed", response_status: 500, next_retry_at: null });
    // A retry would be a job added with the record: there is none.
    expect(await jobsFor(endpoint.id)).toEqual([]);
    expect(target.received).toHaveLength(1);
  });

  it("POST /webhooks/{id}/deliveries/{delivery_id}/retry sends a failed attempt's event again and answers the new attempt", async () => {
    const { client } = await setup();
    const target = receiver.endpoint(failFirstThenOk(503, "busy"));
    const endpoint = await subscribe(client, target);
    const failed = (await client.post(`/webhooks/${endpoint.id}/test`)).body;
    expect(failed.status).toBe("failed");

    const retried = await client.post(`/webhooks/${endpoint.id}/deliveries/${failed.id}/retry`);

    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({
      object: "webhook_delivery",
      event_id: failed.event_id,
      event_type: "webhook.test",
      attempt: 2,
      status: "succeeded",
      response_status: 200,
    });
    expect(retried.body.id).not.toBe(failed.id);
    const [first, second] = target.received;
    if (!first || !second) throw new Error("two requests expected");
    expect(second.body).toBe(first.body);
    expect(header(second, "x-parley-delivery")).toBe(retried.body.id);
    await verifySignature(second.body, header(second, "x-parley-signature"), endpoint.secret);
    expect(await deliveries(client, endpoint.id)).toEqual([retried.body, failed]);
  });

  it("a retry by hand of a delivered event sends the same envelope again", async () => {
    const { client } = await setup();
    const target = receiver.endpoint();
    const endpoint = await subscribe(client, target);
    await createContact(client);
    const [delivered] = await waitForDeliveries(client, endpoint.id);

    const retried = await client.post(`/webhooks/${endpoint.id}/deliveries/${delivered.id}/retry`);

    expect(retried.body).toMatchObject({ event_id: delivered.event_id, attempt: 2, status: "succeeded" });
    const [first, second] = target.received;
    expect(second?.body).toBe(first?.body);
    expect(second?.envelope.type).toBe("contact.created");
  });
});

describe("automatic disabling (decisions.md: 25 consecutive failed events over at least 24 hours)", () => {
  async function failingEndpointWithStreak(client: Client, hoursAgo: number) {
    const target = receiver.endpoint(answer(500, "down"));
    const endpoint = await subscribe(client, target);
    await api.client.sql`
      update webhook_endpoints set failure_count = 24, first_failure_at = now() - make_interval(hours => ${hoursAgo})
      where id = ${endpoint.id}`;
    return { target, endpoint };
  }

  it("disables the endpoint at the 25th failed event when the streak began 25 hours ago, and sends it nothing more", async () => {
    const { client } = await setup();
    const { target, endpoint } = await failingEndpointWithStreak(client, 25);

    await createContact(client);

    await waitForDeliveries(client, endpoint.id);
    const disabled = await getEndpoint(client, endpoint.id);
    expect(disabled).toMatchObject({ enabled: false, failure_count: 25, disabled_reason: expect.any(String) });
    expect(disabled.disabled_reason.length).toBeGreaterThan(0);
    // The retry the failure scheduled runs and sends nothing: the endpoint is disabled.
    await eventually(
      () => jobsFor(endpoint.id),
      (jobs) => jobs.length === 0,
      10_000,
    );
    expect(target.received).toHaveLength(1);
    expect(await deliveries(client, endpoint.id)).toHaveLength(1);
  });

  it("does not disable at the 25th failed event when the streak is younger than 24 hours", async () => {
    const { client } = await setup();
    const { target, endpoint } = await failingEndpointWithStreak(client, 23);

    await createContact(client);

    await waitForDeliveries(client, endpoint.id);
    expect(await getEndpoint(client, endpoint.id)).toMatchObject({
      enabled: true,
      failure_count: 25,
      disabled_reason: null,
    });
    // The next attempt of the same event fails too, and is not another failed event.
    await waitForRequests(target, 2, 10_000);
    await waitForDeliveries(client, endpoint.id, 2);
    expect(await getEndpoint(client, endpoint.id)).toMatchObject({ enabled: true, failure_count: 25 });
    await client.patch(`/webhooks/${endpoint.id}`, { body: { enabled: false } });
  });
});

describe("the 10 second wait", () => {
  it("a receiver that never answers fails the attempt with a timeout after 10 s", async () => {
    const { client } = await setup();
    const target = receiver.endpoint(() => "hold");
    const endpoint = await subscribe(client, target);

    await createContact(client);

    await waitForRequests(target);
    const [delivery] = await waitForDeliveries(client, endpoint.id, 1, 15_000);
    // No more attempts to hold the worker for 10 s each.
    await client.patch(`/webhooks/${endpoint.id}`, { body: { enabled: false } });
    expect(delivery).toMatchObject({
      attempt: 1,
      status: "failed",
      response_status: null,
      response_body: null,
      error: expect.stringMatching(/timed out/i),
      next_retry_at: expect.any(String),
    });
    expect(delivery.duration_ms).toBeGreaterThanOrEqual(10_000);
    expect(delivery.duration_ms).toBeLessThan(11_500);
  }, 20_000);
});
