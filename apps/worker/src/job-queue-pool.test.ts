import { EventEmitter, once } from "node:events";
import { type AddressInfo, connect, createServer, type Server, type Socket } from "node:net";
import { Logger, run, type WorkerEvents } from "graphile-worker";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { closeJobQueuePool, createJobQueuePool, openJobQueuePool, openJobQueueUtils } from "./job-queue-pool.js";

/**
 * A TCP relay to PostgreSQL. `intercept` sees each chunk a client sends and returns true to
 * keep it (and all the connection sends after) from PostgreSQL.
 */
async function startRelay(databaseUrl: string, intercept: (chunk: Buffer, incoming: Socket) => boolean) {
  const target = new URL(databaseUrl);
  const server: Server = createServer((incoming) => {
    const outgoing = connect(Number(target.port), target.hostname);
    let holding = false;
    incoming.on("data", (chunk: Buffer) => {
      if (!holding && intercept(chunk, incoming)) holding = true;
      if (!holding) outgoing.write(chunk);
    });
    outgoing.on("data", (chunk: Buffer) => incoming.write(chunk));
    incoming.on("close", () => outgoing.destroy());
    outgoing.on("close", () => incoming.destroy());
    incoming.on("error", () => {});
    outgoing.on("error", () => {});
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const url = new URL(databaseUrl);
  url.hostname = "127.0.0.1";
  url.port = String((server.address() as AddressInfo).port);
  return { url: url.toString(), close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/**
 * A relay that holds back a connection's `LISTEN "jobs:insert"` (and all it sends after),
 * as a database going away mid-query does, until `cut()` ends it.
 */
async function startListenHoldingRelay(databaseUrl: string) {
  const held: Socket[] = [];
  const relay = await startRelay(databaseUrl, (chunk, incoming) => {
    if (!chunk.includes('LISTEN "jobs:insert"')) return false;
    held.push(incoming);
    return true;
  });
  return {
    ...relay,
    held,
    cut: () => {
      for (const socket of held) socket.destroy();
    },
  };
}

/** PostgreSQL's ErrorResponse when its postmaster died: what a closing connection got in the soak. */
function postmasterExitMessage(): Buffer {
  const fields = ["SFATAL", "VFATAL", "C57P01", "Mterminating connection due to unexpected postmaster exit"];
  const body = Buffer.concat([...fields.map((field) => Buffer.from(`${field}\0`)), Buffer.from([0])]);
  const length = Buffer.alloc(4);
  length.writeInt32BE(body.length + 4);
  return Buffer.concat([Buffer.from("E"), length, body]);
}

/**
 * A relay that answers a connection's Terminate (its client closing it) with that FATAL
 * error, then hangs up, as PostgreSQL going away under a closing connection does.
 */
async function startFatalOnCloseRelay(databaseUrl: string) {
  let answered = 0;
  const relay = await startRelay(databaseUrl, (chunk, incoming) => {
    const terminate = chunk.length === 5 && chunk[0] === "X".charCodeAt(0);
    if (!terminate) return false;
    answered += 1;
    incoming.end(postmasterExitMessage());
    return true;
  });
  return { ...relay, answered: () => answered };
}

describe("the job queue's pool", () => {
  it("opened at a start, holds every connection, and keeps them idle (pg closes them after 10 s by default)", async () => {
    let connections = 0;
    const relay = await startRelay(inject("databaseUrl"), (chunk) => {
      // A client's StartupMessage: its length, then protocol 3.0.
      if (chunk.length >= 8 && chunk.readInt32BE(4) === 196608) connections += 1;
      return false;
    });
    const pool = createJobQueuePool(relay.url, pino({ level: "silent" }), 3);
    try {
      await openJobQueuePool(pool);
      expect(connections).toBe(3);
      expect({ total: pool.totalCount, idle: pool.idleCount }).toEqual({ total: 3, idle: 3 });
      // pg's documented "never closed while idle".
      expect(pool.options.idleTimeoutMillis).toBe(0);
      const { rows } = await pool.query<{ n: number }>("select 1 as n");
      expect(rows).toEqual([{ n: 1 }]);
      expect(connections).toBe(3);
    } finally {
      await closeJobQueuePool(pool, 5_000);
      await relay.close();
    }
  });

  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  beforeAll(() => {
    process.on("unhandledRejection", onUnhandled);
    process.on("uncaughtException", onUnhandled);
  });
  afterAll(() => {
    process.off("unhandledRejection", onUnhandled);
    process.off("uncaughtException", onUnhandled);
  });

  // graphile-worker's LISTEN client is released twice when its runner stops while the LISTEN
  // is unanswered and the connection then dies: once by the stop, once by the LISTEN's
  // failure. The second release threw (pg-pool: "Release called on client which has already
  // been released to the pool") in a promise nobody awaited, and a worker died of it when the
  // soak killed PostgreSQL (patches/graphile-worker@0.17.3.patch).
  it("survives a runner stopped while its LISTEN is unanswered, then cut", async () => {
    const relay = await startListenHoldingRelay(inject("databaseUrl"));
    const logger = pino({ level: "silent" });
    const pool = createJobQueuePool(relay.url, logger);
    const events = new EventEmitter() as WorkerEvents;
    const releases: unknown[] = [];
    events.on("pool:listen:release", ({ client }) => releases.push(client));
    try {
      const quiet = new Logger(() => () => {});
      const runner = await run({
        pgPool: pool,
        concurrency: 1,
        taskList: {},
        noHandleSignals: true,
        events,
        logger: quiet,
      });
      const deadline = Date.now() + 10_000;
      while (relay.held.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(relay.held).toHaveLength(1);

      // The stop releases the LISTEN client (its UNLISTEN waits behind the LISTEN), then the
      // connection dies under both.
      const released = once(events, "pool:listen:release");
      const stopping = runner.stop();
      await released;
      const retried = once(events, "pool:listen:error");
      relay.cut();
      await retried;
      await stopping;
      // The failed LISTEN schedules a reconnection (70-140 ms later) that finds the
      // runner stopped: by then a rejected second release has surfaced.
      await once(events, "pool:listen:connecting");
      expect(unhandled).toEqual([]);
      expect(releases).toHaveLength(1);
    } finally {
      await pool.end().catch(() => {});
      await relay.close();
    }
  });

  // graphile-worker's utilities on a pool of their own took its error listener off at
  // release, then ended it without waiting: a connection still closing when PostgreSQL went
  // away (the soak killed it during a worker's start) emitted an error nobody listened to,
  // and the worker died of it.
  it("keeps the utilities' process alive when PostgreSQL goes away under their closing connection", async () => {
    const relay = await startFatalOnCloseRelay(inject("databaseUrl"));
    const logger = pino({ level: "silent" });
    try {
      const { utils, release } = await openJobQueueUtils(relay.url, logger, { waitMs: 5_000 });
      // One query leaves one idle connection for the release to close.
      await utils.forceUnlockWorkers(["no-such-worker"]);
      await release();
      const deadline = Date.now() + 5_000;
      while (relay.answered() === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(relay.answered()).toBe(1);
      // The error is handled (or not) as the FATAL message is read: a turn of the loop later.
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      await relay.close();
    }
  });
});
