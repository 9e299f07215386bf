import { describe, expect, it } from "vitest";
import { as, createTestOrganization, eventually, useTestApi } from "./harness.js";
import { header, useWebhookReceiver, waitForRequests } from "./webhook-receiver.js";
import { useWorkerFleet } from "./worker-fleet.js";

/**
 * No event lost when the worker dies mid-delivery: a worker in its own process (as in
 * production) is killed while the receiver holds its request open. The test starts its
 * workers itself, so none may exist at module level.
 */
const api = useTestApi({}, { ownDatabase: true });
const receiver = useWebhookReceiver();

const HEARTBEAT_TIMEOUT_MS = 2_000;
const fleet = useWorkerFleet(api, {
  heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS,
  processEnv: { PARLEY_WEBHOOK_FAST_RETRY: "1" },
  workerOptions: { webhookFastRetry: true },
});

/** The deliver_webhook jobs of the endpoint, with who holds them. */
async function jobsFor(endpointId: string) {
  return api.client.sql<{ locked_by: string | null; attempts: number }[]>`
    select locked_by, attempts from graphile_worker._private_jobs where payload->>'endpoint_id' = ${endpointId}`;
}

describe("a worker killed mid-delivery", () => {
  it("loses no event: another worker delivers it again, and it is recorded as succeeded", async () => {
    const org = await createTestOrganization(api);
    const client = as(api, org.test);
    // The first request is held open (the worker dies with it in hand); later ones succeed.
    const target = receiver.endpoint((_, index) => (index === 0 ? "hold" : { status: 200, body: "ok" }));
    const created = await client.post("/webhooks", { body: { url: target.url, events: ["contact.created"] } });
    expect(created.status).toBe(201);
    const endpoint = created.body;
    const child = fleet.spawnProcess();

    await client.post("/contacts", { body: { name: "Ada" } });

    const [held] = await waitForRequests(target, 1, 20_000);
    if (!held) throw new Error("no request");
    const [inHand] = await jobsFor(endpoint.id);
    expect(inHand?.locked_by).toEqual(expect.any(String));
    expect(child.exitCode, fleet.errors()).toBeNull();
    await fleet.kill(child);
    // Nothing was recorded: the process died before the answer.
    expect((await client.get(`/webhooks/${endpoint.id}/deliveries`)).body.data).toEqual([]);

    // A new worker takes the dead worker's job once its heartbeat is stale, and runs it again.
    await fleet.start();
    const received = await waitForRequests(target, 2, 20_000);
    const again = received.slice(1);
    expect(again.map((request) => request.envelope.id)).toContain(held.envelope.id);
    expect(again.every((request) => request.body === held.body)).toBe(true);
    expect(header(again[0] ?? held, "x-parley-delivery")).not.toBe(header(held, "x-parley-delivery"));
    const listed = await eventually(
      async () => (await client.get(`/webhooks/${endpoint.id}/deliveries`)).body.data as any[],
      (list) => list.some((delivery) => delivery.status === "succeeded"),
      10_000,
    );
    expect(listed.find((delivery) => delivery.status === "succeeded")).toMatchObject({
      event_id: held.envelope.id,
      event_type: "contact.created",
      attempt: 1,
      response_status: 200,
    });
    await eventually(
      () => jobsFor(endpoint.id),
      (jobs) => jobs.length === 0,
    );
  }, 60_000);
});
