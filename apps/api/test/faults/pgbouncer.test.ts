import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey, revokeApiKey } from "../../src/organizations/api-keys.js";
import { receiveText, sandboxChannel } from "../delivery-helpers.js";
import { type ApiResponse, as, eventually, setupOrganization, type TestApi, useTestApi } from "../harness.js";
import { useWorkerFleet } from "../worker-fleet.js";
import { useFaultReceivers } from "./fault-receiver.js";
import { hasPgBouncer, PGBOUNCER, type RunningPgBouncer, startPgBouncer } from "./pgbouncer.js";
import { type ApiProcess, useApiProcesses } from "./processes.js";
import { sized } from "./scale.js";

if (!hasPgBouncer) {
  console.warn(`${PGBOUNCER} is not installed (apt-get install pgbouncer): the PgBouncer test is skipped`);
}

/**
 * Issue 25: several processes behind PgBouncer in transaction mode (Debian's 1.18, which
 * keeps no prepared statements): two API processes and two worker processes reach the
 * database through the pooler (`DATABASE_URL`, `DATABASE_PREPARED_STATEMENTS=false`), and
 * straight for what a pooler cannot carry (`DATABASE_DIRECT_URL`: migrations' lock,
 * graphile-worker, LISTEN). Sends, inbound messages and webhooks go through both APIs; one
 * API and one worker are killed with SIGKILL mid-way. Every accepted send is delivered,
 * every event reaches the webhook receiver (duplicates counted), the rate limit is one
 * allowance across both APIs, and a revoked key is refused by both.
 */
const RATE_LIMIT = 300;
const SENDS = sized(120, 400);
const HEARTBEAT_TIMEOUT_MS = 2_000;

const api = useTestApi({}, { ownDatabase: true });
const apis = useApiProcesses();
const receivers = useFaultReceivers();
let bouncer: RunningPgBouncer | undefined;
const pooled = (): Record<string, string> => ({
  DATABASE_URL: bouncer?.url ?? "",
  DATABASE_DIRECT_URL: api.databaseUrl,
  DATABASE_PREPARED_STATEMENTS: "false",
});
/** The worker processes' environment: the pooled URLs are added once the pooler runs. */
const workerEnv: Record<string, string> = {
  PARLEY_WEBHOOK_FAST_RETRY: "1",
  SANDBOX_DELIVERY_DELAY_MS: "50",
  SANDBOX_READ_DELAY_MS: "50",
  LOG_LEVEL: "warn",
};
const fleet = useWorkerFleet(api, { heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS, processEnv: workerEnv });

beforeAll(async () => {
  if (!hasPgBouncer) return;
  bouncer = await startPgBouncer(api.databaseUrl);
  Object.assign(workerEnv, pooled());
});
afterAll(async () => {
  await bouncer?.stop();
});

/** A client on one API process, as `as` is on the in-process one. */
function on(process: ApiProcess, key: string) {
  return as({ ...api, baseUrl: `http://127.0.0.1:${process.port}/v1` } as TestApi, key);
}

/** A request that may meet a dead process: undefined instead of a connection error. */
async function attempt(request: Promise<ApiResponse>): Promise<ApiResponse | undefined> {
  return request.catch(() => undefined);
}

async function runInLanes<T>(items: T[], lanes: number, work: (item: T) => Promise<void>) {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item);
    }),
  );
}

/**
 * Runs the test's body within `budgetMs`: when it throws, or has not ended by then, it fails
 * with the step it was at and what the processes, PgBouncer and PostgreSQL's connections
 * showed, rather than vitest's timeout, which says nothing of where it waited.
 */
async function withinBudget(budgetMs: number, body: (step: (name: string) => void) => Promise<void>) {
  const startedAt = Date.now();
  let current = "starting the processes";
  const step = (name: string) => {
    current = name;
  };
  let timer: NodeJS.Timeout | undefined;
  const overBudget = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not done within ${budgetMs} ms`)), budgetMs);
  });
  try {
    await Promise.race([body(step), overBudget]);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(`${message}\n${await stateOf(`${current} (${Date.now() - startedAt} ms in)`)}`, { cause: error });
  } finally {
    clearTimeout(timer);
  }
}

/** Where the test was and what everything around it showed, for a failure message. */
async function stateOf(step: string): Promise<string> {
  const connections = await api.client.sql<{ application_name: string; state: string; wait: string; count: number }[]>`
    select application_name, coalesce(state, '') as state, coalesce(wait_event_type || ':' || wait_event, '') as wait,
      count(*)::int as count
    from pg_stat_activity where datname = current_database() group by 1, 2, 3 order by 4 desc`.catch(
    (error: unknown) => `not read: ${String(error)}`,
  );
  return [
    `at step: ${step}`,
    `PostgreSQL's connections to the test's database: ${JSON.stringify(connections)}`,
    `PgBouncer's log (end):\n${bouncer?.output().slice(-1_500) ?? ""}`,
    apis.outputs(1_000),
    `workers' stderr (end):\n${fleet.errors().slice(-1_000)}`,
  ].join("\n");
}

describe.skipIf(!hasPgBouncer)("two APIs and two workers behind PgBouncer in transaction mode", () => {
  it(
    "delivers every accepted send and every event through SIGKILLs, shares the rate limit and sees revocations",
    () =>
      withinBudget(270_000, async (step) => {
        const env: Record<string, string> = { ...pooled(), RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT) };
        const pooledUrl = bouncer?.url ?? "";
        const [first, second] = await Promise.all([apis.start(pooledUrl, env), apis.start(pooledUrl, env)]);
        if (!first || !second) throw new Error("the APIs did not start");
        const workers = [fleet.spawnProcess(), fleet.spawnProcess()];

        // 1. One allowance across both processes: 2 × RATE_LIMIT requests alternate between them.
        step("1. one rate limit across both APIs");
        const limited = (await setupOrganization(api)).org;
        // Within one fixed one-minute window: a burst split across two would be admitted twice.
        if (Date.now() % 60_000 > 45_000) {
          await eventually(
            async () => Date.now() % 60_000,
            (msIntoMinute) => msIntoMinute < 30_000,
            20_000,
          );
        }
        const allowance = new Map<string, { accepted: number; refused: number }>();
        const refusedBy = new Set<number>();
        await runInLanes(
          Array.from({ length: RATE_LIMIT * 2 }, (_, index) => index),
          10,
          async (index) => {
            const target = index % 2 === 0 ? first : second;
            const response = await on(target, limited.test).get("/api-keys/current");
            const window = response.headers.get("x-ratelimit-reset") ?? "";
            const counts = allowance.get(window) ?? { accepted: 0, refused: 0 };
            if (response.status === 200) counts.accepted++;
            else if (response.status === 429) {
              counts.refused++;
              refusedBy.add(target.port);
            } else throw new Error(`unexpected ${response.status}: ${JSON.stringify(response.body)}`);
            allowance.set(window, counts);
          },
        );
        // Each process alone would admit RATE_LIMIT: the two together would admit twice as many.
        // The margin leaves room for counts aggregated in each process before they are shared.
        for (const [window, counts] of allowance) {
          expect(counts.accepted, `window ${window}`).toBeLessThan(RATE_LIMIT * 1.5);
        }
        expect(refusedBy).toEqual(new Set([first.port, second.port]));

        // 2. A revoked key is refused by both processes within a bounded time.
        step("2. a revocation seen by both APIs");
        const revocable = (await setupOrganization(api)).org;
        const key = await createApiKey(api.context.db, { organizationId: revocable.id, environment: "test" });
        for (const target of [first, second])
          expect((await on(target, key.key).get("/api-keys/current")).status).toBe(200);
        expect(await revokeApiKey(api.context.db, revocable.id, key.id)).toBe(true);
        const revokedAt = Date.now();
        for (const target of [first, second]) {
          await eventually(
            async () => (await on(target, key.key).get("/api-keys/current")).status,
            (status) => status === 401,
            5_000,
          );
        }
        const revocationMs = Date.now() - revokedAt;

        // 3. Sends, inbound messages and webhooks through both, one API and one worker killed mid-way.
        step("3. sends, inbound messages and webhooks through both APIs, SIGKILLs");
        const { org, client } = await setupOrganization(api);
        const receiver = await receivers.start();
        const endpoint = await client.post("/webhooks", { body: { url: receiver.url, events: ["*"] } });
        expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
        const channel = await sandboxChannel(client, "whatsapp");
        const conversations: string[] = [];
        for (let index = 0; index < 4; index++) {
          const contact = await client.post("/contacts", { body: { name: `Customer ${index}` } });
          const conversation = await client.post("/conversations", {
            body: { contact_id: contact.body.id, channel_id: channel.id },
          });
          expect(conversation.status, JSON.stringify(conversation.body)).toBe(201);
          // The customer writes first: the session window opens.
          await receiveText(client, conversation.body.id, "Hello");
          conversations.push(conversation.body.id);
        }

        const accepted: string[] = [];
        let inbound = 0;
        let alive = [first, second];
        let killed = false;
        await runInLanes(
          Array.from({ length: SENDS }, (_, index) => index),
          8,
          async (index) => {
            if (!killed && accepted.length >= SENDS / 3) {
              killed = true;
              alive = [second];
              first.child.kill("SIGKILL");
              workers[0]?.kill("SIGKILL");
            }
            const target = alive[index % alive.length] ?? second;
            const conversationId = conversations[index % conversations.length] ?? "";
            const sent = await attempt(
              on(target, org.test).post("/messages", {
                body: { conversation_id: conversationId, type: "text", text: `Send ${index}` },
              }),
            );
            if (sent?.status === 201) accepted.push(sent.body.id);
            else if (sent)
              throw new Error(
                `send refused: ${sent.status} ${JSON.stringify(sent.body)}\n${target.output().slice(-3000)}`,
              );
            if (index % 3 === 0) {
              const received = await attempt(
                on(target, org.test).post("/test-helpers/inbound-messages", {
                  body: { conversation_id: conversationId, type: "text", text: `Reply ${index}` },
                }),
              );
              if (received?.status === 201) inbound++;
            }
          },
        );
        expect(killed).toBe(true);
        expect(second.child.exitCode, second.output()).toBeNull();
        expect(workers[1]?.exitCode, fleet.errors()).toBeNull();

        // Every accepted send is delivered (the sandbox confirms each), by the surviving worker.
        step("4. every accepted send delivered");
        const undelivered = await eventually(
          async () =>
            (
              await api.client.sql<{ id: string }[]>`
          select id from messages where id = any(${accepted}) and status <> 'delivered'`
            ).map((row) => row.id),
          (ids) => ids.length === 0,
          60_000,
        );
        expect(undelivered).toEqual([]);

        // Every event of the organization reached the receiver at least once.
        step("5. every event at the receiver");
        const eventIds = async () =>
          (
            await api.client.sql<{ id: string }[]>`
        select id from events where organization_id = ${org.id} and environment = 'test'`
          ).map((row) => row.id);
        await eventually(
          async () => {
            const [left] = await api.client.sql<{ count: number }[]>`
          select (select count(*) from event_outbox)::int + (select count(*) from graphile_worker.jobs
            where task_identifier in ('deliver_webhook', 'deliver_message', 'apply_receipt'))::int as count`;
            const expected = await eventIds();
            const delivered = receiver.deliveredCounts();
            return { left: left?.count ?? -1, missing: expected.filter((id) => !delivered.has(id)).length };
          },
          ({ left, missing }) => left === 0 && missing === 0,
          60_000,
        );
        const expected = await eventIds();
        const counts = receiver.deliveredCounts();
        expect(new Set(counts.keys())).toEqual(new Set(expected));
        const deliveries = [...counts.values()].reduce((sum, count) => sum + count, 0);
        console.log(
          `behind PgBouncer: ${accepted.length} sends accepted of ${SENDS}, ${inbound} inbound messages, ` +
            `${expected.length} events, ${deliveries} webhook deliveries (${deliveries - counts.size} duplicates); ` +
            `rate limit windows ${JSON.stringify(Object.fromEntries(allowance))}; revocation seen by both in ${revocationMs} ms`,
        );
      }),
    300_000,
  );
});
