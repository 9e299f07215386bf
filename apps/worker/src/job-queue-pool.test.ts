import { EventEmitter, once } from "node:events";
import { type AddressInfo, connect, createServer, type Server, type Socket } from "node:net";
import { Logger, run, type WorkerEvents } from "graphile-worker";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createJobQueuePool } from "./job-queue-pool.js";

/**
 * A TCP relay to PostgreSQL that holds back a connection's `LISTEN "jobs:insert"` (and all
 * it sends after), as a database going away mid-query does, until `cut()` ends it.
 */
async function startListenHoldingRelay(databaseUrl: string) {
  const target = new URL(databaseUrl);
  const held: Socket[] = [];
  const server: Server = createServer((incoming) => {
    const outgoing = connect(Number(target.port), target.hostname);
    let holding = false;
    incoming.on("data", (chunk: Buffer) => {
      if (!holding && chunk.includes('LISTEN "jobs:insert"')) {
        holding = true;
        held.push(incoming);
      }
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
  return {
    url: url.toString(),
    held,
    cut: () => {
      for (const socket of held) socket.destroy();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("the job queue's pool", () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  beforeAll(() => {
    process.on("unhandledRejection", onUnhandled);
  });
  afterAll(() => {
    process.off("unhandledRejection", onUnhandled);
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
});
