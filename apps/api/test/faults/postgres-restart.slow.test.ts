import { describe, expect, it } from "vitest";
import { sendableConversation } from "../delivery-helpers.js";
import { eventually, setupOrganization, useTestApi, useTestWorker } from "../harness.js";
import { useOwnPostgres } from "./own-postgres.js";

/**
 * PostgreSQL restarted under send load. Requests caught by the restart fail with a clear 503
 * `service_unavailable` and `Retry-After`, never a 500; nothing is half-written; the API
 * and the worker recover by themselves within seconds; every 201 given is in the database
 * with its delivery, and is delivered. The file runs its own PostgreSQL server: the run's
 * shared one must never go down under other files. `pnpm test:faults` only (the server's
 * start alone takes seconds).
 */
const postgresServer = useOwnPostgres();
const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "1000000" }, { databaseUrl: () => postgresServer.url });
useTestWorker(api);

/** Clients sending one message after another. */
const CLIENTS = 16;
/** From PostgreSQL accepting connections again to the API's first success after it. */
const RECOVERY_MS = 5_000;
/** The longest any one request may take, restart or not: a request caught by it fails fast. */
const SLOWEST_MS = 5_000;
/** Successes in a row at the end: recovered for good, not by luck. */
const STREAK = 200;

interface Outcome {
  client: number;
  at: number;
  /** How long the request took. */
  ms: number;
  status: number;
  /** The message id of a 201. */
  id?: string;
  code?: string;
  retryAfter?: string | null;
  requestIdMatches?: boolean;
  /** The request failed without an HTTP answer. */
  networkError?: string;
}

describe("PostgreSQL restarted under send load", () => {
  it("answers 503 service_unavailable while it is down, recovers by itself, and keeps every 201 with its delivery", async () => {
    const { client, org } = await setupOrganization(api);
    const conversation = await sendableConversation(client, "messenger");
    const outcomes: Outcome[] = [];
    let sending = true;

    const send = async (clientIndex: number, sequence: number): Promise<Outcome> => {
      const at = Date.now();
      const headers: Record<string, string> = {
        authorization: `Bearer ${org.test}`,
        "content-type": "application/json",
      };
      // Half the clients send with an Idempotency-Key: its record is written in the send's transaction.
      if (clientIndex % 2 === 1) headers["idempotency-key"] = `restart-${clientIndex}-${sequence}`;
      try {
        const response = await fetch(`${api.baseUrl}/messages`, {
          method: "POST",
          headers,
          body: JSON.stringify({
            conversation_id: conversation.id,
            type: "text",
            text: `Load ${clientIndex}.${sequence}`,
          }),
        });
        const body = (await response.json()) as { id?: string; error?: { code: string; request_id: string } };
        return {
          client: clientIndex,
          at,
          ms: Date.now() - at,
          status: response.status,
          ...(body.id ? { id: body.id } : {}),
          ...(body.error
            ? {
                code: body.error.code,
                retryAfter: response.headers.get("retry-after"),
                requestIdMatches: body.error.request_id === response.headers.get("x-parley-request-id"),
              }
            : {}),
        };
      } catch (error) {
        return {
          client: clientIndex,
          at,
          ms: Date.now() - at,
          status: 0,
          networkError: String((error as Error).cause ?? error),
        };
      }
    };
    const loops = Array.from({ length: CLIENTS }, async (_, clientIndex) => {
      for (let sequence = 0; sending; sequence++) outcomes.push(await send(clientIndex, sequence));
    });
    const since = (at: number) => outcomes.filter((outcome) => outcome.at >= at);

    try {
      // Load running, then the restart: a fast shutdown terminates every session.
      await eventually(
        async () => outcomes.filter((outcome) => outcome.status === 201).length,
        (created) => created >= 20,
        20_000,
      );
      const stoppedAt = Date.now();
      await postgresServer.stop();
      // Down until clients have felt it.
      await eventually(
        async () => since(stoppedAt).filter((outcome) => outcome.status === 503).length,
        (unavailable) => unavailable >= CLIENTS,
        20_000,
      );
      await postgresServer.start();
      const upAt = Date.now();
      const recovered = await eventually(
        async () => since(upAt).find((outcome) => outcome.status === 201),
        (first) => first !== undefined,
        RECOVERY_MS + 5_000,
      );
      const recoveryMs = (recovered?.at ?? 0) - upAt;
      // Then only successes.
      await eventually(
        async () => {
          let streak = 0;
          for (const outcome of outcomes) streak = outcome.status === 201 ? streak + 1 : 0;
          return streak;
        },
        (streak) => streak >= STREAK,
        30_000,
      );
      sending = false;
      await Promise.all(loops);

      const slowest = outcomes.reduce((worst, outcome) => (outcome.ms > worst.ms ? outcome : worst));
      const byStatus = new Map<number, number>();
      for (const outcome of outcomes) byStatus.set(outcome.status, (byStatus.get(outcome.status) ?? 0) + 1);
      console.log(
        `PostgreSQL restart: ${outcomes.length} sends from ${CLIENTS} clients: ` +
          `${[...byStatus].map(([status, count]) => `${count} x ${status}`).join(", ")}; ` +
          `first 201 ${recoveryMs} ms after PostgreSQL accepted connections again; slowest request ${slowest.ms} ms (${slowest.status})`,
      );
      expect(outcomes.filter((outcome) => outcome.networkError)).toEqual([]);
      expect([...byStatus.keys()].sort()).toEqual([201, 503]);
      for (const outcome of outcomes.filter((outcome) => outcome.status === 503)) {
        expect(outcome).toMatchObject({ code: "service_unavailable", retryAfter: "2", requestIdMatches: true });
      }
      expect(recoveryMs).toBeLessThanOrEqual(RECOVERY_MS);
      expect(slowest.ms, JSON.stringify(slowest)).toBeLessThanOrEqual(SLOWEST_MS);
    } finally {
      sending = false;
      await Promise.all(loops);
    }

    // Nothing half-written: every message still queued has its outbox row or its job.
    const orphans = await api.client.sql<{ id: string }[]>`
      select m.id from messages m
      where m.conversation_id = ${conversation.id} and m.status = 'queued'
        and not exists (select 1 from message_outbox o where o.message_id = m.id)
        and not exists (select 1 from graphile_worker._private_jobs j
                        where j.payload->>'message_id' = m.id or j.payload::jsonb->'message_ids' ? m.id)`;
    expect(orphans).toEqual([]);
    // Every 201 is stored.
    const createdIds = outcomes.flatMap((outcome) => (outcome.status === 201 && outcome.id ? [outcome.id] : []));
    const stored = await api.client.sql<{ id: string }[]>`
      select id from messages where conversation_id = ${conversation.id} and direction = 'outbound'`;
    const storedIds = new Set(stored.map((row) => row.id));
    expect(createdIds.filter((id) => !storedIds.has(id))).toEqual([]);
    // A 503 means nothing was done, but a commit whose answer the restart cut off is stored
    // all the same (the client's retry with its Idempotency-Key finds it): at most one per 503.
    expect(storedIds.size - createdIds.length).toBeLessThanOrEqual(outcomes.length - createdIds.length);

    // The worker recovered too: every stored message is delivered.
    const statuses = await eventually(
      () =>
        api.client.sql<{ status: string; count: number }[]>`
          select status, count(*)::int as count from messages
          where conversation_id = ${conversation.id} and direction = 'outbound' group by status`,
      (rows) => rows.length === 1 && rows[0]?.status === "delivered",
      60_000,
    );
    expect(statuses[0]?.count).toBe(storedIds.size);
  }, 180_000);
});
