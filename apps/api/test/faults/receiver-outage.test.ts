import { nextRetryDelayMs } from "@parley/core";
import { describe, expect, it } from "vitest";
import { type Client, eventually, setupOrganization, useTestApi, useTestWorker } from "../harness.js";
import { type FaultReceiver, useFaultReceivers } from "./fault-receiver.js";
import { sized } from "./scale.js";

/**
 * Receivers down for a while, then up: one refusing connections (its port closed), one
 * answering 503. Every event is delivered once they are back, each event's attempts on the
 * retry schedule (fast mode: 1 s, 1 s, 5 s, 30 s, ...). No order between events is promised
 * (docs/guides/webhooks.md, "Order"): an event recorded after the receiver is back does not
 * wait for the retries of older ones.
 */
const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "100000" }, { ownDatabase: true });
useTestWorker(api, { webhookFastRetry: true });
const receivers = useFaultReceivers();

const EVENTS = sized(20, 100);
/**
 * The receivers stay down until every event has failed this many attempts. The fast
 * schedule waits 1 s, 1 s, 5 s, 30 s: down about 3 s then 5 s to the next attempt, or
 * about 8 s then 30 s.
 */
const FAILED_ATTEMPTS = sized(3, 4);
/** Slack for the worker to pick a due attempt up, on a loaded machine. */
const PICKUP_MS = 3_000;

interface DeliveryRow {
  endpoint_id: string;
  event_id: string;
  attempt: number;
  succeeded: boolean;
  response_status: number | null;
  error: string | null;
  /** Milliseconds since the epoch. */
  next_retry_at: number | null;
  created_at: number;
}

async function subscribe(client: Client, url: string) {
  const response = await client.post("/webhooks", { body: { url, events: ["contact.created"] } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body as { id: string };
}

async function deliveriesOf(endpointId: string): Promise<DeliveryRow[]> {
  return api.client.sql<DeliveryRow[]>`
    select endpoint_id, event_id, attempt, succeeded, response_status, error,
      (extract(epoch from next_retry_at) * 1000)::float8 as next_retry_at,
      (extract(epoch from created_at) * 1000)::float8 as created_at
    from webhook_deliveries where endpoint_id = ${endpointId} order by created_at, attempt`;
}

async function contactCreatedEvents(organizationId: string): Promise<string[]> {
  const rows = await api.client.sql<{ id: string }[]>`
    select id from events where organization_id = ${organizationId} and type = 'contact.created' order by created_at, id`;
  return rows.map((row) => row.id);
}

/**
 * Each event's attempts, in order: numbered 1, 2, 3...; every one but the last failed and
 * scheduled the next within the schedule's step (up to 20 % jitter); the next ran when due,
 * not before; the last succeeded. Returns the number of attempts per event.
 */
function expectScheduleKept(rows: DeliveryRow[], eventIds: string[], failure: (row: DeliveryRow) => void) {
  const attemptsPerEvent: number[] = [];
  for (const eventId of eventIds) {
    const attempts = rows.filter((row) => row.event_id === eventId).sort((a, b) => a.attempt - b.attempt);
    expect(
      attempts.map((row) => row.attempt),
      eventId,
    ).toEqual(attempts.map((_, index) => index + 1));
    const last = attempts.at(-1);
    expect(last?.succeeded, `${eventId} delivered`).toBe(true);
    expect(last?.next_retry_at).toBeNull();
    for (const [index, row] of attempts.slice(0, -1).entries()) {
      expect(row.succeeded).toBe(false);
      failure(row);
      const step = nextRetryDelayMs(row.attempt, true, () => 0) ?? 0;
      const wait = (row.next_retry_at ?? 0) - row.created_at;
      expect(wait, `${eventId} attempt ${row.attempt}: wait`).toBeGreaterThanOrEqual(step);
      expect(wait).toBeLessThanOrEqual(Math.round(step * 1.2));
      const next = attempts[index + 1];
      if (!next || row.next_retry_at === null) throw new Error("a next attempt was due");
      // Recorded when its answer came: not before it was due, nor long after.
      expect(next.created_at).toBeGreaterThanOrEqual(row.next_retry_at);
      expect(next.created_at - row.next_retry_at).toBeLessThanOrEqual(PICKUP_MS);
    }
    attemptsPerEvent.push(attempts.length);
  }
  return attemptsPerEvent;
}

/** Arrivals answered 2xx, counted per event: exactly once each (no attempt after a success). */
function expectDeliveredOnce(receiver: FaultReceiver, eventIds: string[]) {
  const counts = receiver.deliveredCounts();
  expect([...counts.keys()].sort()).toEqual([...eventIds].sort());
  expect([...counts.values()].every((count) => count === 1)).toBe(true);
}

describe("a receiver down for a while, then up", () => {
  it("gets every event once it is back, each event's attempts on the retry schedule, whether it refused connections or answered 503", async () => {
    const refusing = await receivers.start();
    const unavailable = await receivers.start();
    const { org, client } = await setupOrganization(api);
    const refusingEndpoint = await subscribe(client, refusing.url);
    const unavailableEndpoint = await subscribe(client, unavailable.url);
    await refusing.down();
    unavailable.answer = { status: 503 };

    for (let start = 0; start < EVENTS; start += 10) {
      const batch = Array.from({ length: Math.min(10, EVENTS - start) }, (_, index) => start + index);
      await Promise.all(
        batch.map(async (index) => {
          const response = await client.post("/contacts", { body: { name: `Outage ${index}` } });
          expect(response.status).toBe(201);
        }),
      );
    }
    const during = await contactCreatedEvents(org.id);
    expect(during).toHaveLength(EVENTS);

    // Down until every event has failed FAILED_ATTEMPTS attempts at both endpoints.
    const failedEnough = async (endpointId: string) => {
      const rows = await deliveriesOf(endpointId);
      return during.every((eventId) => rows.filter((row) => row.event_id === eventId).length >= FAILED_ATTEMPTS);
    };
    await eventually(
      async () => (await failedEnough(refusingEndpoint.id)) && (await failedEnough(unavailableEndpoint.id)),
      (done) => done,
      sized(20_000, 60_000),
    );
    expect(refusing.arrivals).toEqual([]);
    expect(unavailable.arrivals.length).toBeGreaterThanOrEqual(EVENTS * FAILED_ATTEMPTS);
    const cameBack = Date.now();
    await refusing.up();
    unavailable.answer = { status: 200 };

    // An event recorded now is delivered at once, before the older events' next retries.
    const late = await client.post("/contacts", { body: { name: "After the outage" } });
    expect(late.status).toBe(201);
    const all = await eventually(
      () => contactCreatedEvents(org.id),
      (ids) => ids.length === EVENTS + 1,
    );
    const lateEventId = all.find((id) => !during.includes(id)) ?? "";

    for (const receiver of [refusing, unavailable]) {
      await eventually(
        async () => receiver.deliveredCounts().size,
        (delivered) => delivered === EVENTS + 1,
        sized(20_000, 60_000),
      );
      const firstDelivered = receiver.arrivals.find((arrival) => arrival.status === 200);
      expect(firstDelivered?.eventId, "the new event came first").toBe(lateEventId);
      expectDeliveredOnce(receiver, all);
    }
    const recovered = Date.now() - cameBack;
    // The worker records each attempt once its answer came: wait for the last records.
    for (const endpoint of [refusingEndpoint, unavailableEndpoint]) {
      await eventually(
        async () => (await deliveriesOf(endpoint.id)).filter((row) => row.succeeded).length,
        (succeeded) => succeeded === EVENTS + 1,
      );
    }

    const refusedAttempts = expectScheduleKept(await deliveriesOf(refusingEndpoint.id), during, (row) => {
      expect(row.response_status).toBeNull();
      expect(row.error).toBe("Connection failed (ECONNREFUSED)");
    });
    const unavailableAttempts = expectScheduleKept(await deliveriesOf(unavailableEndpoint.id), during, (row) => {
      expect(row.response_status).toBe(503);
    });
    // The 503s the receiver answered are exactly the failed attempts recorded.
    expect(unavailable.arrivals.filter((arrival) => arrival.status === 503)).toHaveLength(
      unavailableAttempts.reduce((sum, attempts) => sum + attempts - 1, 0),
    );
    for (const attempts of [...refusedAttempts, ...unavailableAttempts]) {
      expect(attempts).toBeGreaterThan(FAILED_ATTEMPTS);
    }
    const [late1] = (await deliveriesOf(refusingEndpoint.id)).filter((row) => row.event_id === lateEventId);
    expect(late1).toMatchObject({ attempt: 1, succeeded: true });
    for (const endpoint of [refusingEndpoint, unavailableEndpoint]) {
      const current = await client.get(`/webhooks/${endpoint.id}`);
      expect(current.body).toMatchObject({ enabled: true, failure_count: 0 });
    }
    console.log(
      `receiver outage: ${EVENTS} events, down until each had failed ${FAILED_ATTEMPTS} attempts; all delivered ${recovered} ms after the receivers came back ` +
        `(attempts per event: ${Math.min(...refusedAttempts, ...unavailableAttempts)} to ${Math.max(...refusedAttempts, ...unavailableAttempts)})`,
    );
  }, 180_000);
});
