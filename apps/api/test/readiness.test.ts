import { pino } from "pino";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.js";
import { type RunningApi, startApi } from "../src/server.js";
import { useOwnPostgres } from "./faults/own-postgres.js";

/** Polls `check` until it holds, within `timeoutMs`. */
async function eventually(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function probe(port: number, path: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: response.status, body: await response.json() };
}

function expectNotReady(answer: { status: number; body: any }, message: RegExp) {
  expect(answer.status).toBe(503);
  expect(answer.body).toEqual({
    error: { code: "service_unavailable", message: expect.stringMatching(message), request_id: expect.any(String) },
  });
}

describe("/healthz and /readyz", () => {
  const database = useOwnPostgres();
  let running: RunningApi | undefined;
  let sql: postgres.Sql;
  let port = 0;

  beforeAll(async () => {
    running = await startApi(database.url, loadConfig({ PORT: "0", HOST: "127.0.0.1" }), pino({ level: "silent" }));
    port = running.port;
    sql = postgres(database.url, { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await sql?.end({ timeout: 1 });
    await running?.close();
  });

  it("is ready on a migrated, reachable database", async () => {
    expect(await probe(port, "/healthz")).toEqual({ status: 200, body: { status: "ok" } });
    expect(await probe(port, "/readyz")).toEqual({ status: 200, body: { status: "ready" } });
  });

  it("answers 503 while the newest migration of the journal is not applied", async () => {
    const [newest] =
      await sql`select id, hash, created_at from drizzle.__drizzle_migrations order by created_at desc limit 1`;
    if (!newest) throw new Error("no migration recorded");
    await sql`delete from drizzle.__drizzle_migrations where id = ${newest.id}`;
    try {
      const answer = await probe(port, "/readyz");
      expectNotReady(answer, /migrations are pending/);
      expect((await probe(port, "/healthz")).status).toBe(200);
    } finally {
      await sql`insert into drizzle.__drizzle_migrations (id, hash, created_at) values (${newest.id}, ${newest.hash}, ${newest.created_at})`;
    }
    expect((await probe(port, "/readyz")).status).toBe(200);
  });

  it("answers 503 while PostgreSQL is down, and 200 again once it is back; liveness stays 200", async () => {
    await sql.end({ timeout: 1 });
    await database.stop();
    try {
      const answer = await probe(port, "/readyz");
      expectNotReady(answer, /database/);
      expect(await probe(port, "/healthz")).toEqual({ status: 200, body: { status: "ok" } });
    } finally {
      await database.start();
      sql = postgres(database.url, { max: 1, onnotice: () => {} });
    }
    await eventually(async () => (await probe(port, "/readyz")).status === 200);
  });

  it("answers 503 as soon as a graceful shutdown begins, while the server still serves, before it closes", async () => {
    const draining = await startApi(
      database.url,
      loadConfig({ PORT: "0", HOST: "127.0.0.1", SHUTDOWN_DRAIN_MS: "1500" }),
      pino({ level: "silent" }),
    );
    expect((await probe(draining.port, "/readyz")).status).toBe(200);
    let closed = false;
    const closing = draining.close().then(() => {
      closed = true;
    });
    const answer = await probe(draining.port, "/readyz");
    expectNotReady(answer, /shutting down/);
    // Still serving (liveness, and anything else) during the drain window.
    expect((await probe(draining.port, "/healthz")).status).toBe(200);
    expect(closed).toBe(false);
    await closing;
    await expect(fetch(`http://127.0.0.1:${draining.port}/readyz`)).rejects.toThrow();
  });
});
