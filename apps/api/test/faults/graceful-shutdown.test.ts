import http from "node:http";
import { describe, expect, it } from "vitest";
import { sendableConversation } from "../delivery-helpers.js";
import { type Client, eventually, setupOrganization, useTestApi } from "../harness.js";
import { useWorkerFleet } from "../worker-fleet.js";
import { useFaultReceivers } from "./fault-receiver.js";
import { connects, useApiProcesses } from "./processes.js";
import { sized } from "./scale.js";

/**
 * SIGTERM to the API and worker processes, as production runs them (`apps/api/dist/main.js`
 * with `RUN_WORKER=false`, `apps/worker/dist/main.js`). The API finishes every request in
 * flight with its real answer and refuses new connections meanwhile; the worker finishes
 * or releases every job in hand, so a worker started after it delivers everything, long
 * before a lost lock could expire.
 */
const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "100000" }, { ownDatabase: true });
/** Long: only a job released by the graceful shutdown is taken again within the test. */
const HEARTBEAT_TIMEOUT_MS = 120_000;
const fleet = useWorkerFleet(api, {
  heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS,
  processEnv: { SANDBOX_DELIVERY_DELAY_MS: "0", PARLEY_WEBHOOK_FAST_RETRY: "1" },
  workerOptions: { sandbox: { deliveryDelayMs: 0, readDelayMs: 50 }, webhookFastRetry: true },
});
const apis = useApiProcesses();
const receivers = useFaultReceivers();

interface Answer {
  status: number;
  body: any;
}

/** A keep-alive connection of its own, proven accepted by a first request answered on it. */
async function acceptedConnection(port: number, key: string): Promise<http.Agent> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const first = await send(agent, port, key, "GET", "/v1/contacts?limit=1");
  expect(first.status).toBe(200);
  return agent;
}

function send(agent: http.Agent, port: number, key: string, method: string, path: string, body?: string) {
  return new Promise<Answer>((resolve, reject) => {
    const req = http.request({ agent, host: "127.0.0.1", port, method, path, headers: headersFor(key, body) }, (res) =>
      collect(res, resolve, reject),
    );
    req.on("error", reject);
    req.end(body);
  });
}

function headersFor(key: string, body?: string): http.OutgoingHttpHeaders {
  return {
    authorization: `Bearer ${key}`,
    ...(body === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(body) }),
  };
}

function collect(res: http.IncomingMessage, resolve: (answer: Answer) => void, reject: (error: Error) => void) {
  const chunks: Buffer[] = [];
  res.on("data", (chunk: Buffer) => chunks.push(chunk));
  res.on("error", reject);
  res.on("end", () => {
    const text = Buffer.concat(chunks).toString("utf8");
    resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined });
  });
}

/**
 * A POST whose headers the server has read (it answered `100 Continue`) and whose body has
 * half arrived: in the server's hands, waiting for the rest, until `finish()`.
 */
async function halfSentPost(agent: http.Agent, port: number, key: string, path: string, body: string) {
  const req = http.request({
    agent,
    host: "127.0.0.1",
    port,
    method: "POST",
    path,
    headers: { ...headersFor(key, body), expect: "100-continue" },
  });
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on("response", (res) => collect(res, resolve, reject));
    req.on("error", reject);
  });
  req.flushHeaders();
  await new Promise<void>((resolve, reject) => {
    req.once("continue", resolve);
    req.once("error", reject);
  });
  const half = Math.floor(body.length / 2);
  await new Promise<void>((resolve) => req.write(body.slice(0, half), () => resolve()));
  return { answer, finish: () => req.end(body.slice(half)) };
}

describe("SIGTERM to the API process", () => {
  it("answers every request in flight for real, refuses new connections meanwhile, then exits 0", async () => {
    const { org, client } = await setupOrganization(api);
    const held = await createContact(client, "Locked");
    const server = await apis.start(api.databaseUrl);

    // In flight when SIGTERM arrives: requests whose bodies have half arrived...
    const halfSent = await Promise.all(
      Array.from({ length: 5 }, async (_, index) => {
        const agent = await acceptedConnection(server.port, org.test);
        return halfSentPost(
          agent,
          server.port,
          org.test,
          "/v1/contacts",
          JSON.stringify({ name: `In flight ${index}` }),
        );
      }),
    );
    // ...and one running in the database, blocked on a row lock this test holds.
    let unlock = () => {};
    const locked = new Promise<void>((resolve) => {
      unlock = resolve;
    });
    let lockHeld = () => {};
    const lockTaken = new Promise<void>((resolve) => {
      lockHeld = resolve;
    });
    const lock = api.client.sql.begin(async (sql) => {
      await sql`select id from contacts where id = ${held.id} for update`;
      lockHeld();
      await locked;
    });
    await lockTaken;
    const patchAgent = await acceptedConnection(server.port, org.test);
    const patched = send(
      patchAgent,
      server.port,
      org.test,
      "PATCH",
      `/v1/contacts/${held.id}`,
      JSON.stringify({ name: "Renamed during shutdown" }),
    );
    await eventually(
      () => api.client.sql<{ count: number }[]>`
        select count(*)::int as count from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`,
      (rows) => (rows[0]?.count ?? 0) >= 1,
    );

    server.child.kill("SIGTERM");
    // New connections are refused while the requests in flight still run.
    await eventually(
      () => connects(server.port),
      (accepted) => !accepted,
      5_000,
    );
    expect(server.child.exitCode, server.output()).toBeNull();

    for (const request of halfSent) request.finish();
    unlock();
    await lock;
    const answers = await Promise.all(halfSent.map((request) => request.answer));
    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201, 201, 201]);
    expect(await patched).toMatchObject({ status: 200, body: { name: "Renamed during shutdown" } });
    // The keep-alive connections stay open on this side: the server must not wait for them.
    const exitedAt = Date.now();
    const code = await Promise.race([
      server.exited,
      eventually(
        async () => "still running",
        () => false,
        3_000,
      ),
    ]);
    expect(code, server.output()).toBe(0);
    console.log(`API SIGTERM: exited ${Date.now() - exitedAt} ms after its last answer`);
    const stored = await api.client.sql<{ name: string }[]>`
      select name from contacts where organization_id = ${org.id} and name like 'In flight %' order by name`;
    expect(stored.map((row) => row.name)).toEqual([0, 1, 2, 3, 4].map((index) => `In flight ${index}`));
  }, 60_000);
});

describe("SIGTERM to the worker process", () => {
  it("finishes or releases every job in hand: a worker started after it delivers every message and webhook", async () => {
    const { client } = await setupOrganization(api);
    const receiver = await receivers.start();
    // A slow receiver: webhook deliveries are in hand too when SIGTERM arrives.
    receiver.answer = { status: 200, delayMs: 300 };
    const webhook = await client.post("/webhooks", { body: { url: receiver.url, events: ["message.sent"] } });
    expect(webhook.status).toBe(201);
    const conversation = await sendableConversation(client, "messenger");
    const child = fleet.spawnProcess();
    const count = sized(20, 100);
    const sent = await Promise.all(
      Array.from({ length: count }, async (_, index) => {
        const response = await client.post("/messages", {
          body: { conversation_id: conversation.id, type: "text", text: `Shutdown ${index} [sandbox:slow=500]` },
        });
        expect(response.status).toBe(201);
        return response.body.id as string;
      }),
    );
    // Jobs in hand: deliveries to the (slow) provider. (The new worker installs the queue's schema first.)
    await eventually(
      () =>
        api.client.sql<{ table: string | null }[]>`select to_regclass('graphile_worker._private_jobs')::text as table`,
      (rows) => rows[0]?.table != null,
      20_000,
    );
    await eventually(
      () => api.client.sql<{ count: number }[]>`
        select count(*)::int as count from graphile_worker._private_jobs where locked_by is not null`,
      // A delivery job carries the channel's messages (up to 50): one in hand holds several.
      (rows) => (rows[0]?.count ?? 0) >= 1,
      20_000,
    );

    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    child.kill("SIGTERM");
    expect(await exited, fleet.errors()).toBe(0);
    // Nothing left locked: every job in hand was finished or released.
    const locked = await api.client.sql<{ id: string }[]>`
      select id::text from graphile_worker._private_jobs where locked_by is not null`;
    expect(locked).toEqual([]);
    expect(await api.client.sql`select worker_id from worker_heartbeats`).toEqual([]);
    const [progress] = await api.client.sql<{ delivered: number }[]>`
      select count(*) filter (where status <> 'queued')::int as delivered from messages where id = any(${sent})`;

    // A new worker delivers the rest: the lost-lock path (a 120 s heartbeat) could not be that fast.
    await fleet.start();
    await eventually(
      () => api.client.sql<{ status: string; count: number }[]>`
        select status, count(*)::int as count from messages where id = any(${sent}) group by status`,
      (rows) => rows.length === 1 && rows[0]?.status === "delivered",
      30_000,
    );
    // Every message.sent event reached the receiver, at least once.
    const events = await api.client.sql<{ id: string }[]>`
      select id from events where type = 'message.sent' and data->'message'->>'id' = any(${sent})`;
    expect(events).toHaveLength(count);
    await eventually(
      async () => receiver.deliveredCounts(),
      (delivered) => events.every((event) => delivered.has(event.id)),
      30_000,
    );
    console.log(
      `worker SIGTERM: ${progress?.delivered ?? 0} of ${count} messages past queued when it stopped; ` +
        `the next worker delivered the rest; ${receiver.arrivals.length - events.length} webhook duplicates`,
    );
  }, 120_000);
});

async function createContact(client: Client, name: string) {
  const response = await client.post("/contacts", { body: { name } });
  expect(response.status).toBe(201);
  return response.body as { id: string };
}
