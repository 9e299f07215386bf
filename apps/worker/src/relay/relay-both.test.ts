import { makeWorkerUtils, type WorkerUtils } from "graphile-worker";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { relayBothOnce } from "./relay-both.js";

let sql: postgres.Sql;
let utils: WorkerUtils;

beforeAll(async () => {
  sql = postgres(inject("databaseUrl"), { max: 2, onnotice: () => {} });
  // graphile-worker's schema, as a worker installs it when it starts.
  utils = await makeWorkerUtils({ connectionString: inject("databaseUrl") });
  await utils.migrate();
});

afterAll(async () => {
  await utils.release();
  await sql.end({ timeout: 5 });
});

describe("relay passes", () => {
  it("an empty pass adds no job and sends no jobs:insert notification, which would send every worker looking for one", async () => {
    const received: string[] = [];
    const listener = await sql.listen("jobs:insert", (payload) => received.push(payload));
    try {
      expect(await relayBothOnce(sql)).toBe(0);
      // Notifications arrive in commit order: once the marker is here, one sent by the
      // pass would be too.
      await sql`select pg_notify('jobs:insert', 'marker')`;
      const deadline = Date.now() + 10_000;
      while (!received.includes("marker") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(received).toEqual(["marker"]);
    } finally {
      await listener.unlisten();
    }
  });
});
