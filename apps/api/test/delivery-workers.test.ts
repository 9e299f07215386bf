import { whatsappTextMessage } from "@parley/channels/testing";
import { relayBothOnce } from "@parley/worker";
import { describe, expect, it } from "vitest";
import {
  eventTypes,
  jobsFor,
  sendableConversation,
  sendText,
  statusOf,
  testClient,
  waitForStatus,
  waitUntilSettled,
} from "./delivery-helpers.js";
import { eventually, setupOrganization, useTestApi } from "./harness.js";
import {
  connectMetaChannel,
  deliverWebhook,
  postMessage,
  randomSecret,
  sendRequests,
  useMetaSimulator,
  waId,
  waitForInbound,
} from "./meta-helpers.js";
import { useWorkerFleet } from "./worker-fleet.js";

/**
 * The worker as a fleet: a crashed process's job finished by another worker exactly once,
 * graceful shutdown, several workers side by side. Every test starts its own workers, so
 * none may exist at module level: it would take the jobs the test means for another.
 */
const meta = useMetaSimulator();
const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "100000" }, { ownDatabase: true });

const HEARTBEAT_TIMEOUT_MS = 2_000;
const fleet = useWorkerFleet(api, {
  heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS,
  processEnv: { SANDBOX_DELIVERY_DELAY_MS: "0" },
  workerOptions: { sandbox: { deliveryDelayMs: 50, readDelayMs: 50 } },
});

/** Whether graphile-worker's schema exists yet (a new worker installs it on this new database). */
async function queueInstalled() {
  const [row] = await api.client.sql<{ table: string | null }[]>`
    select to_regclass('graphile_worker._private_jobs')::text as table`;
  return row?.table != null;
}

/** Waits until the message's delivery job is in a worker's hands; returns the job. */
async function deliveryInHand(messageId: string, timeoutMs = 15_000) {
  await eventually(queueInstalled, (installed) => installed, timeoutMs);
  const [job] = await eventually(
    () => jobsFor(api, messageId, "deliver_message"),
    (jobs) => jobs[0]?.locked_by != null,
    timeoutMs,
  );
  if (!job?.locked_by) throw new Error("no job in hand");
  return { ...job, locked_by: job.locked_by };
}

async function heartbeatOf(lockerId: string) {
  return api.client.sql<{ worker_id: string }[]>`select worker_id from worker_heartbeats where worker_id = ${lockerId}`;
}

describe("crash recovery", () => {
  it("a worker process killed mid-delivery: another worker finishes the delivery exactly once", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "messenger");
    const child = fleet.spawnProcess();
    const queued = await sendText(client, conversation.id, "Slow provider [sandbox:slow=8000]");

    const inHand = await deliveryInHand(queued.id);
    expect(inHand.attempts).toBe(1);
    // The process beats for the id its jobs are locked under: that is how its death is seen.
    await eventually(
      () => heartbeatOf(inHand.locked_by),
      (rows) => rows.length === 1,
      2_000,
    );
    expect(child.exitCode, fleet.errors()).toBeNull();
    await fleet.kill(child);
    expect(await statusOf(api, queued.id)).toBe("queued");
    expect(await eventTypes(api, queued.id)).toEqual([]);
    expect(await jobsFor(api, queued.id, "deliver_message")).toMatchObject([{ locked_by: inHand.locked_by }]);

    // Only now a worker in this process: it finds the dead pool's heartbeat stale, releases
    // its job and runs it (8 s again, the provider being slow on every attempt).
    await fleet.start();
    const [retried] = await eventually(
      () => jobsFor(api, queued.id, "deliver_message"),
      (jobs) => jobs[0]?.locked_by != null && jobs[0].locked_by !== inHand.locked_by,
      15_000,
    );
    expect(retried?.attempts).toBe(2);
    await waitForStatus(api, client, queued.id, "delivered", 20_000);
    await waitUntilSettled(api, queued.id);
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent", "message.delivered"]);
    expect(await heartbeatOf(inHand.locked_by)).toEqual([]);
  }, 60_000);
});

describe("graceful shutdown", () => {
  it("finishes the delivery in hand before it stops", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "messenger");
    const worker = await fleet.start();
    const queued = await sendText(client, conversation.id, "Almost there [sandbox:slow=1000]");
    const inHand = await deliveryInHand(queued.id);

    await fleet.stop(worker);
    expect(await statusOf(api, queued.id)).toBe("sent");
    expect(await jobsFor(api, queued.id, "deliver_message")).toEqual([]);
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent"]);
    // Its heartbeat went with it: a stopped worker is not taken for a crashed one.
    expect(await heartbeatOf(inHand.locked_by)).toEqual([]);
    // The delivery receipt it scheduled waits for the next worker.
    expect(await jobsFor(api, queued.id, "apply_receipt")).toMatchObject([{ locked_by: null, attempts: 0 }]);

    await fleet.start();
    await waitForStatus(api, client, queued.id, "delivered");
    await waitUntilSettled(api, queued.id);
    expect(await eventTypes(api, queued.id)).toEqual(["message.sent", "message.delivered"]);
  }, 30_000);
});

describe("batched delivery", () => {
  it("one job carries a channel's messages in order; a temporary fault or a refusal of one does not hold the others back", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "messenger");
    // A worker installs the job queue, then stops: the sends wait in the outbox.
    await fleet.stop(await fleet.start());
    const first = await sendText(client, conversation.id, "First");
    const flaky = await sendText(client, conversation.id, "Flaky [sandbox:temporary-error=1]");
    const refused = await sendText(client, conversation.id, "Refused [sandbox:fail=131026]");
    const last = await sendText(client, conversation.id, "Last");
    const ids = [first.id, flaky.id, refused.id, last.id];

    expect(await relayBothOnce(api.client.sql)).toBeGreaterThanOrEqual(4);
    const jobs = await jobsFor(api, first.id, "deliver_message");
    expect(jobs.map((job) => job.payload)).toEqual([{ message_ids: ids }]);

    await fleet.start();
    await waitForStatus(api, client, last.id, "delivered");
    // Each delivery receipt is a job of its own: the first one's may land after the last's.
    await waitForStatus(api, client, first.id, "delivered");
    expect(await statusOf(api, refused.id)).toBe("failed");
    // The flaky one, split off into a job of its own, is retried after the backoff (exp(1) s).
    const [retry] = await jobsFor(api, flaky.id, "deliver_message");
    expect(retry?.payload).toEqual({ message_ids: [flaky.id], attempts_before: 1 });
    await waitForStatus(api, client, flaky.id, "delivered", 15_000);
    for (const id of ids) await waitUntilSettled(api, id);
    expect(await eventTypes(api, first.id)).toEqual(["message.sent", "message.delivered"]);
    expect(await eventTypes(api, flaky.id)).toEqual(["message.sent", "message.delivered"]);
    expect(await eventTypes(api, refused.id)).toEqual(["message.failed"]);
    expect(await eventTypes(api, last.id)).toEqual(["message.sent", "message.delivered"]);
  }, 30_000);
});

describe("batched delivery to a real provider", () => {
  it("records each provider's answer before the batch's next send: a worker dying mid-batch sends again only the message in its hands", async () => {
    const { org, live } = await setupOrganization(api);
    const channel = await connectMetaChannel(api, meta.simulator, org.id, "whatsapp");
    const customer = waId();
    // The customer writes first (a worker receives it), opening WhatsApp's window.
    const receiver = await fleet.start({ meta: meta.simulator.options() });
    const inboundId = `wamid.${randomSecret("in")}`;
    await deliverWebhook(
      api,
      whatsappTextMessage({ phoneNumberId: channel.accountId, from: customer, id: inboundId, text: "Hi" }),
      channel.appSecret,
    );
    const inbound = await waitForInbound(api, live, inboundId);
    await fleet.stop(receiver);

    const texts = ["First", "Second", "Third"];
    const sent = [];
    for (const text of texts)
      sent.push(await postMessage(live, { conversation_id: inbound.conversation_id, type: "text", text }));
    const ids = sent.map((message) => message.id);
    expect(await relayBothOnce(api.client.sql)).toBeGreaterThanOrEqual(3);
    expect((await jobsFor(api, ids[0], "deliver_message")).map((job) => job.payload)).toEqual([{ message_ids: ids }]);

    // The provider holds the second send: the worker is mid-batch, as a kill -9 would find it.
    const bodyText = (request: { body: unknown }) => (request.body as { text?: { body?: string } }).text?.body;
    meta.simulator.failNext(1, { hang: true }, (request) => bodyText(request) === "Second");
    await fleet.start({ meta: meta.simulator.options({ timeoutMs: 3_000 }) });
    await eventually(
      async () => sendRequests(meta.simulator, channel.accountId).map(bodyText),
      (bodies) => bodies.includes("Second"),
      10_000,
    );
    // Before, the batch's answers were written together at its end: "First" was still
    // queued here, and a worker killed now would have sent it again.
    expect(await statusOf(api, ids[0])).toBe("sent");
    expect(await eventTypes(api, ids[0])).toEqual(["message.sent"]);
    expect(await statusOf(api, ids[2])).toBe("queued");

    // The held send times out: the second is retried (a timeout is ambiguous), the third sent.
    await eventually(
      async () => Promise.all(ids.map((id) => statusOf(api, id))),
      (statuses) => statuses.every((status) => status === "sent"),
      30_000,
    );
    const received = sendRequests(meta.simulator, channel.accountId).map(bodyText);
    expect(received.filter((text) => text === "First")).toHaveLength(1);
    expect(received.filter((text) => text === "Third")).toHaveLength(1);
  }, 60_000);
});

describe("several workers at once", () => {
  it("two workers on one database deliver 50 messages exactly once each", async () => {
    const { client } = await testClient(api);
    const conversation = await sendableConversation(client, "messenger");
    await fleet.start({ concurrency: 3 });
    await fleet.start({ concurrency: 3 });

    // A slightly slow provider keeps several jobs in hand at a time, so both pools take some.
    const sent = await Promise.all(
      Array.from({ length: 50 }, (_, index) => sendText(client, conversation.id, `Batch ${index} [sandbox:slow=60]`)),
    );
    const ids = sent.map((message) => message.id);
    const lockers = new Set<string>();
    await eventually(
      async () => {
        const rows = await api.client.sql<{ status: string | null; locked_by: string | null }[]>`
          select messages.status, jobs.locked_by from messages
          left join graphile_worker._private_jobs as jobs on (jobs.payload::jsonb)->'message_ids' ? messages.id
          where messages.id = any(${ids})`;
        for (const row of rows) if (row.locked_by) lockers.add(row.locked_by);
        return rows.filter((row) => row.status === "delivered").length;
      },
      (delivered) => delivered === 50,
      30_000,
    );

    expect(lockers.size, "jobs in hand of both workers").toBe(2);
    const counts = await api.client.sql<{ type: string; messages: number; events: number }[]>`
      select type, count(distinct data->'message'->>'id')::int as messages, count(*)::int as events
      from events where data->'message'->>'id' = any(${ids}) group by type order by type`;
    expect(counts).toEqual([
      { type: "message.delivered", messages: 50, events: 50 },
      { type: "message.sent", messages: 50, events: 50 },
    ]);
    // graphile-worker deletes a finished job just after its task returns, which may be
    // after the status the task committed is visible.
    await eventually(
      async () => {
        const [left] = await api.client.sql<{ count: number }[]>`
          select count(*)::int as count from graphile_worker._private_jobs
          where payload->>'message_id' = any(${ids}) or (payload::jsonb)->'message_ids' ?| ${ids}::text[]`;
        return left?.count;
      },
      (count) => count === 0,
      10_000,
    );
  }, 60_000);
});
