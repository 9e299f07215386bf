import { newId } from "@parley/db";
import { describe, expect, it } from "vitest";
import { eventually, setupOrganization, useTestApi } from "../harness.js";
import { useWorkerFleet } from "../worker-fleet.js";
import { useFaultReceivers } from "./fault-receiver.js";
import { sized } from "./scale.js";

/**
 * A worker process killed with SIGKILL in the middle of a large batch of webhook
 * deliveries: every event still reaches the receiver, at least once. The duplicates (events
 * the dead worker had sent but not yet recorded) are counted and reported. The test starts
 * its workers itself, so none may exist at module level.
 */
const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "100000" }, { ownDatabase: true });
const HEARTBEAT_TIMEOUT_MS = 2_000;
const fleet = useWorkerFleet(api, {
  heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS,
  processEnv: { PARLEY_WEBHOOK_FAST_RETRY: "1" },
  workerOptions: { webhookFastRetry: true },
});
const receivers = useFaultReceivers();

/** 1,000 in `pnpm test`, 10,000 in `pnpm test:faults`. */
const EVENTS = sized(1_000, 10_000);

/**
 * Records `count` contact.created events as the API does (an `events` row and its
 * `event_outbox` row), in bulk: creating 10,000 contacts through the API would take the
 * test's whole time, and the fault is in the worker.
 */
async function recordEvents(organizationId: string, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, () => newId("event"));
  for (let start = 0; start < ids.length; start += 2_000) {
    const chunk = JSON.stringify(ids.slice(start, start + 2_000));
    await api.client.sql.begin(async (sql) => {
      await sql`
        insert into events (id, organization_id, environment, type, data)
        select id, ${organizationId}, 'test', 'contact.created', json_build_object('contact', json_build_object('id', 'cnt_' || substr(id, 5), 'name', 'Bulk'))
        from json_array_elements_text(${chunk}::json) as id`;
      await sql`insert into event_outbox (event_id) select id from json_array_elements_text(${chunk}::json) as id`;
    });
  }
  return ids;
}

async function leftToDo(endpointId: string) {
  const [row] = await api.client.sql<{ outbox: number; jobs: number }[]>`
    select (select count(*) from event_outbox)::int as outbox,
      (select count(*) from graphile_worker._private_jobs where payload->>'endpoint_id' = ${endpointId})::int as jobs`;
  return row ?? { outbox: -1, jobs: -1 };
}

describe("a worker killed with SIGKILL mid-batch", () => {
  it(`delivers every one of ${EVENTS} events at least once, and counts the duplicates`, async () => {
    const receiver = await receivers.start();
    const { client } = await setupOrganization(api);
    const created = await client.post("/webhooks", { body: { url: receiver.url, events: ["contact.created"] } });
    expect(created.status).toBe(201);
    const endpointId: string = created.body.id;
    const org = (
      await api.client.sql<{ organization_id: string }[]>`
      select organization_id from webhook_endpoints where id = ${endpointId}`
    )[0]?.organization_id;
    if (!org) throw new Error("no endpoint");

    const child = fleet.spawnProcess();
    const started = Date.now();
    const eventIds = await recordEvents(org, EVENTS);

    // Killed about a third of the way through.
    await eventually(
      async () => receiver.deliveredCounts().size,
      (delivered) => delivered >= EVENTS / 3,
      sized(60_000, 300_000),
    );
    expect(child.exitCode, fleet.errors()).toBeNull();
    await fleet.kill(child);
    const deliveredBeforeKill = receiver.deliveredCounts().size;
    // The jobs the dead worker held, and their events: each may have reached the receiver
    // without being recorded (a job of the relay carries several events, see attemptWebhookBatch).
    const [held] = await api.client.sql<{ jobs: number; events: number }[]>`
      select count(*)::int as jobs,
             coalesce(sum(coalesce(json_array_length(payload->'event_ids'), 1)), 0)::int as events
      from graphile_worker._private_jobs where locked_by is not null`;
    const lockedAtKill = held?.jobs ?? 0;
    const eventsHeldAtKill = held?.events ?? 0;

    // A new worker takes over once the dead one's heartbeat is stale.
    await fleet.start();
    await eventually(
      async () => receiver.deliveredCounts().size,
      (delivered) => delivered === EVENTS,
      sized(60_000, 600_000),
    );
    await eventually(
      () => leftToDo(endpointId),
      (left) => left.outbox === 0 && left.jobs === 0,
      20_000,
    );
    const elapsed = Date.now() - started;

    const counts = receiver.deliveredCounts();
    const deliveries = [...counts.values()].reduce((sum, count) => sum + count, 0);
    const duplicates = deliveries - counts.size;
    console.log(
      `SIGKILL mid-delivery: ${EVENTS} events, worker killed after ${deliveredBeforeKill} had arrived holding ${lockedAtKill} jobs of ${eventsHeldAtKill} events; ` +
        `${deliveries} deliveries, ${duplicates} duplicates (${[...counts.values()].filter((count) => count > 1).length} events twice or more), ` +
        `all delivered in ${(elapsed / 1000).toFixed(1)} s (${Math.round((EVENTS / elapsed) * 1000)} events/s)`,
    );
    // At least once: every event arrived, and nothing else did.
    expect(new Set(counts.keys())).toEqual(new Set(eventIds));
    // A duplicate can only come from a job the dead worker held, run again: each of its events once at most.
    expect(duplicates).toBeLessThanOrEqual(eventsHeldAtKill);
    // Every event has a successful attempt on record.
    const [recorded] = await api.client.sql<{ events: number }[]>`
      select count(distinct event_id)::int as events from webhook_deliveries where endpoint_id = ${endpointId} and succeeded`;
    expect(recorded?.events).toBe(EVENTS);
  }, 900_000);
});
