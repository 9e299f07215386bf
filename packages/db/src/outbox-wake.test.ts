import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOutboxWaker, OUTBOX_WAKE_CHANNEL, WAKE_INTERVAL_MS } from "./outbox-wake.js";
import { startTestDatabase } from "./test-database.js";

describe("outbox wake-ups", () => {
  let database: { url: string; stop(): Promise<void> };
  let listener: postgres.Sql;

  beforeAll(async () => {
    database = await startTestDatabase();
    listener = postgres(database.url, { max: 1, onnotice: () => {} });
  });

  afterAll(async () => {
    await listener?.end({ timeout: 2 });
    await database?.stop();
  });

  async function eventually(condition: () => boolean, timeoutMs = 5_000) {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error("condition not met in time");
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  it("tells a listening process, and a burst of changes shares a few NOTIFYs", async () => {
    let received = 0;
    let sentinel = false;
    const subscription = await listener.listen(OUTBOX_WAKE_CHANNEL, (payload) => {
      if (payload === "sentinel") sentinel = true;
      else received++;
    });
    const errors: unknown[] = [];
    const waker = createOutboxWaker(database.url, (error) => errors.push(error));
    try {
      waker.wake();
      await eventually(() => received >= 1);

      received = 0;
      for (let i = 0; i < 200; i++) waker.wake();
      await eventually(() => received >= 1);
      // Notifications arrive in commit order: once a later one is in, the burst's all are.
      await waker.close();
      await listener`select pg_notify(${OUTBOX_WAKE_CHANNEL}, 'sentinel')`;
      await eventually(() => sentinel);
      // One in flight and one pending at most: the burst did not become 200 statements.
      expect(received).toBeGreaterThanOrEqual(1);
      expect(received).toBeLessThanOrEqual(2);
      expect(errors).toEqual([]);
    } finally {
      await waker.close();
      await subscription.unlisten();
    }
  });

  it("wakes at once after a quiet moment, at most once per interval under a steady flow, and always after the last change", async () => {
    const arrivals: number[] = [];
    const subscription = await listener.listen(OUTBOX_WAKE_CHANNEL, () => arrivals.push(performance.now()));
    const waker = createOutboxWaker(database.url, () => {});
    try {
      // Warm the connection: the first statement also connects.
      waker.wake();
      await eventually(() => arrivals.length >= 1);
      await new Promise((resolve) => setTimeout(resolve, WAKE_INTERVAL_MS * 4));
      arrivals.length = 0;

      const quietWake = performance.now();
      waker.wake();
      await eventually(() => arrivals.length >= 1);
      // Not held back by the interval: sent as the change committed.
      expect((arrivals[0] ?? Number.POSITIVE_INFINITY) - quietWake).toBeLessThan(WAKE_INTERVAL_MS * 20);

      // A change every millisecond for 200 ms.
      arrivals.length = 0;
      const started = performance.now();
      let lastWake = started;
      while (performance.now() - started < 200) {
        waker.wake();
        lastWake = performance.now();
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      await eventually(() => arrivals.some((at) => at >= lastWake));
      const elapsed = performance.now() - started;
      // About one per interval (plus the leading one), never one per change (about 200).
      expect(arrivals.length).toBeLessThanOrEqual(Math.ceil(elapsed / WAKE_INTERVAL_MS) + 2);
      expect(arrivals.length).toBeGreaterThanOrEqual(2);
    } finally {
      await waker.close();
      await subscription.unlisten();
    }
  });
});
