import { createDatabaseClient, type DatabaseClient, newId, postgresClientOf } from "@parley/db";
import { makeWorkerUtils } from "graphile-worker";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { applyReceiptsInOrder, receiptsAfter } from "./receipts.js";

let client: DatabaseClient;

beforeAll(async () => {
  client = createDatabaseClient(inject("databaseUrl"), { max: 2 });
  // graphile-worker's schema, as a worker installs it when it starts.
  const utils = await makeWorkerUtils({ connectionString: inject("databaseUrl") });
  await utils.migrate();
  await utils.release();
});

afterAll(async () => {
  await client.close();
});

class RolledBack extends Error {}

/** The apply_receipt jobs the call queues for a message, seen inside its transaction, then rolled back. */
async function jobsQueuedBy(call: (messageId: string, tx: DatabaseClient["db"]) => Promise<void>) {
  const messageId = newId("message");
  let jobs: { payload: unknown; delay_ms: number }[] = [];
  await client.db
    .transaction(async (tx) => {
      await call(messageId, tx as unknown as DatabaseClient["db"]);
      jobs = await postgresClientOf(tx).unsafe(
        `select jobs.payload, extract(epoch from jobs.run_at - now()) * 1000 as delay_ms
         from graphile_worker._private_jobs as jobs
         join graphile_worker._private_tasks as tasks on tasks.id = jobs.task_id
         where tasks.identifier = 'apply_receipt' and jobs.payload->>'message_id' = $1`,
        [messageId],
      );
      throw new RolledBack();
    })
    .catch((error: unknown) => {
      if (!(error instanceof RolledBack)) throw error;
    });
  return { messageId, jobs };
}

describe("the sandbox's receipts", () => {
  it("queues only the first later receipt, carrying the ones after it, so none can overtake another", async () => {
    const { messageId, jobs } = await jobsQueuedBy((id, tx) =>
      applyReceiptsInOrder(tx, "http://localhost", id, [
        { status: "delivered", afterMs: 50 },
        { status: "read", afterMs: 150 },
      ]),
    );
    expect(jobs).toHaveLength(1);
    expect(Number(jobs[0]?.delay_ms)).toBeGreaterThan(40);
    expect(Number(jobs[0]?.delay_ms)).toBeLessThanOrEqual(50);
    expect(jobs[0]?.payload).toEqual({
      message_id: messageId,
      status: "delivered",
      following: [{ status: "read", after_ms: 100 }],
    });
  });

  it("keeps a longer chain's times: each receipt carries the rest, their delays counted from it", async () => {
    const { messageId, jobs } = await jobsQueuedBy((id, tx) =>
      applyReceiptsInOrder(tx, "http://localhost", id, [
        { status: "delivered", afterMs: 50 },
        { status: "read", afterMs: 100 },
        { status: "failed", afterMs: 150, error: { code: "x", message: "y" } },
      ]),
    );
    expect(jobs[0]?.payload).toEqual({
      message_id: messageId,
      status: "delivered",
      following: [
        { status: "read", after_ms: 50 },
        { status: "failed", after_ms: 100, error: { code: "x", message: "y" } },
      ],
    });
    // Once `delivered` is applied, `read` is queued 50 ms on, carrying `failed` 50 ms after it.
    const carried =
      (jobs[0]?.payload as { following?: Parameters<typeof receiptsAfter>[0] } | undefined)?.following ?? [];
    const next = await jobsQueuedBy((id, tx) =>
      applyReceiptsInOrder(tx, "http://localhost", id, receiptsAfter(carried)),
    );
    expect(next.jobs).toHaveLength(1);
    expect(Number(next.jobs[0]?.delay_ms)).toBe(50);
    expect(next.jobs[0]?.payload).toEqual({
      message_id: next.messageId,
      status: "read",
      following: [{ status: "failed", after_ms: 50, error: { code: "x", message: "y" } }],
    });
  });

  it("counts the following receipts' delays from the one applied", () => {
    expect(
      receiptsAfter([
        { status: "delivered", after_ms: 0 },
        { status: "read", after_ms: 100 },
      ]),
    ).toEqual([
      { status: "delivered", afterMs: 0 },
      { status: "read", afterMs: 100 },
    ]);
  });
});
