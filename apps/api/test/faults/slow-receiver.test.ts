import { describe, expect, it } from "vitest";
import { type Client, eventually, setupOrganization, useTestApi, useTestWorker } from "../harness.js";
import { type FaultReceiver, useFaultReceivers } from "./fault-receiver.js";
import { sized } from "./scale.js";

/**
 * One receiver that never answers (the worker gives up after 10 s) must not delay the
 * deliveries to other endpoints: each endpoint may hold only its share of the worker's
 * slots (docs/guides/webhooks.md, "Slow endpoints").
 */
const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "100000" }, { ownDatabase: true });
useTestWorker(api, { webhookFastRetry: true, concurrency: 10 });
/** The worker's defaults at concurrency 10 (apps/worker/src/webhooks/endpoint-slots.ts): all slots but a fifth; a fifth once slow. */
const PER_ENDPOINT = 8;
const PER_SLOW_ENDPOINT = 2;
/** The webhook timeout, and slack for the worker to see it and the receiver to see the request go. */
const TIMED_OUT_AFTER_MS = 10_000 + 1_500;
const receivers = useFaultReceivers();

/** Events queued for the slow endpoint before the fast one gets any. */
const SLOW_BACKLOG = sized(40, 300);
/** Events to the fast endpoint, one after another. */
const FAST_EVENTS = 10;
/**
 * The full run goes on sending them until this long after the slow endpoint's first
 * requests have timed out, so its retries (known slow by then) compete too.
 */
const PAST_FIRST_TIMEOUTS_MS = sized(0, 10_000);
/** The bound for each of the fast endpoint's events: from the API call to its arrival. */
const FAST_WITHIN_MS = 1_500;

async function subscribe(client: Client, url: string) {
  const response = await client.post("/webhooks", { body: { url, events: ["contact.created"] } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body as { id: string };
}

async function createContact(client: Client, name: string): Promise<string> {
  const response = await client.post("/contacts", { body: { name } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body.id;
}

async function pendingJobs(endpointId: string): Promise<number> {
  const [row] = await api.client.sql<{ count: number }[]>`
    select count(*)::int as count from graphile_worker._private_jobs where payload->>'endpoint_id' = ${endpointId}`;
  return row?.count ?? 0;
}

/** When the contact's `contact.created` arrived at the receiver. */
async function arrivalOf(receiver: FaultReceiver, contactId: string, timeoutMs: number) {
  const found = await eventually(
    async () => receiver.arrivals.find((arrival) => arrival.body.includes(contactId)),
    (arrival) => arrival !== undefined,
    timeoutMs,
  );
  if (!found) throw new Error("no arrival");
  return found;
}

describe("a receiver that never answers", () => {
  it("holds at most its share of the worker's slots, and another endpoint's events still arrive within a second or so", async () => {
    const slow = await receivers.start();
    slow.answer = "hold";
    const fast = await receivers.start();
    const slowOrg = await setupOrganization(api);
    const fastOrg = await setupOrganization(api);
    const slowEndpoint = await subscribe(slowOrg.client, slow.url);
    const fastEndpoint = await subscribe(fastOrg.client, fast.url);

    // One event at a time until the slow endpoint holds its share of the slots: the relay
    // gives an endpoint the events it finds together as one job, so events created at once
    // could become fewer jobs than the endpoint has slots.
    for (let index = 0; index < PER_ENDPOINT; index++) {
      await createContact(slowOrg.client, `Slow ${index}`);
      await eventually(
        async () => slow.held(),
        (held) => held > index,
        10_000,
      );
    }
    // The rest of its backlog waits.
    for (let start = PER_ENDPOINT; start < SLOW_BACKLOG; start += 20) {
      const batch = Array.from({ length: Math.min(20, SLOW_BACKLOG - start) }, (_, index) => start + index);
      await Promise.all(batch.map((index) => createContact(slowOrg.client, `Slow ${index}`)));
    }

    // How many requests the slow receiver holds open, sampled all along.
    const samples: { at: number; held: number }[] = [];
    const sampler = setInterval(() => samples.push({ at: Date.now(), held: slow.held() }), 25);
    const latencies: number[] = [];
    const firstRequests = slow.arrivals.slice(0, PER_ENDPOINT).map((arrival) => arrival.receivedAt);
    const sendUntil = Math.max(...firstRequests) + TIMED_OUT_AFTER_MS + PAST_FIRST_TIMEOUTS_MS;
    try {
      for (let index = 0; index < FAST_EVENTS || (PAST_FIRST_TIMEOUTS_MS > 0 && Date.now() < sendUntil); index++) {
        const started = Date.now();
        const contactId = await createContact(fastOrg.client, `Fast ${index}`);
        const arrival = await arrivalOf(fast, contactId, 15_000);
        latencies.push(arrival.receivedAt - started);
      }
    } finally {
      clearInterval(sampler);
    }
    const backlogLeft = await pendingJobs(slowEndpoint.id);
    const mostHeld = Math.max(...samples.map((sample) => sample.held));
    // Once the first requests have timed out, the endpoint is known slow: PER_SLOW_ENDPOINT at a time.
    const knownSlow = samples.filter((sample) => sample.at > Math.max(...firstRequests) + TIMED_OUT_AFTER_MS);
    const mostHeldWhenSlow = Math.max(0, ...knownSlow.map((sample) => sample.held));
    console.log(
      `slow receiver: ${SLOW_BACKLOG} events queued for it, at most ${mostHeld} held at once ` +
        `(${knownSlow.length ? `${mostHeldWhenSlow} once known slow` : "the run ended before its first timeout"}), ${backlogLeft} jobs left; ` +
        `${latencies.length} events to the other endpoint arrived after ${Math.min(...latencies)} to ${Math.max(...latencies)} ms`,
    );
    expect(backlogLeft, "the slow endpoint still had a backlog while the fast one was served").toBeGreaterThan(0);
    expect(mostHeld).toBe(PER_ENDPOINT);
    expect(mostHeldWhenSlow).toBeLessThanOrEqual(PER_SLOW_ENDPOINT);
    expect(Math.max(...latencies)).toBeLessThanOrEqual(FAST_WITHIN_MS);
    expect(fast.deliveredCounts().size).toBe(latencies.length);

    // The slow receiver recovers: its whole backlog is delivered too (the held attempts count
    // as failures once released late or timed out, and are retried in a second).
    slow.answer = { status: 200 };
    slow.release(200);
    await eventually(
      async () => slow.deliveredCounts().size,
      (delivered) => delivered === SLOW_BACKLOG,
      sized(30_000, 120_000),
    );
    await eventually(
      async () => (await pendingJobs(slowEndpoint.id)) + (await pendingJobs(fastEndpoint.id)),
      (left) => left === 0,
      15_000,
    );
  }, 180_000);
});
