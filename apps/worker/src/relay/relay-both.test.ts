import { relayBothOnce } from "@parley/core";
import { explainGenericPlan, newId, type PlanNode, scansOf } from "@parley/db";
import { makeWorkerUtils, type WorkerUtils } from "graphile-worker";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";

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

  it("reads each event it relays by its key, even by a generic plan on stale statistics (one read every event of the organization)", async () => {
    const organizationId = newId("organization");
    await sql`insert into organizations (id, name) values (${organizationId}, 'Relay plan test')`;
    await sql`
      insert into webhook_endpoints (id, organization_id, environment, url, events, secret)
      values (${newId("webhook")}, ${organizationId}, 'test', 'https://example.com/hook', array['contact.created'], 'whsec_x')`;
    // A history of events, and statistics taken while both outboxes were full of them:
    // what a busy minute leaves for the next relay pass to plan with.
    await sql`
      insert into events (id, organization_id, environment, type, data)
      select 'evt_plan_' || ${organizationId} || '_' || i, ${organizationId}, 'test', 'message.sent', '{}'
      from generate_series(1, 3000) as i`;
    await sql`insert into event_outbox (event_id) select id from events where organization_id = ${organizationId}`;
    await sql`analyze events`;
    await sql`analyze event_outbox`;
    await sql`delete from event_outbox where event_id in (select id from events where organization_id = ${organizationId})`;

    const plan = await genericPlanOfRelayPass(async (tx) => {
      const [event] = await tx<{ id: string }[]>`
        insert into events (id, organization_id, environment, type, data)
        values (${newId("event")}, ${organizationId}, 'test', 'contact.created', '{}') returning id`;
      await tx`insert into event_outbox (event_id) values (${event?.id ?? ""})`;
    });
    const scans = scansOf(plan);
    expect(scans.filter((scan) => scan.relation === "events").map((scan) => scan.index)).toEqual(["events_pkey"]);
    for (const scan of scans.filter((scan) => scan.relation !== undefined)) {
      expect(scan.node, `${scan.relation} is read by ${scan.node}`).not.toBe("Seq Scan");
    }
  });
});

/**
 * The plan a relay pass ran with, made generic as PostgreSQL makes it for a statement
 * prepared and run a few times, after `prepare` wrote rows in the same transaction;
 * everything is rolled back. The pass's statement and parameters are taken from the
 * client as it sends them, and the pass is run by EXPLAIN ANALYZE.
 */
async function genericPlanOfRelayPass(prepare: (tx: postgres.TransactionSql) => Promise<void>) {
  const sent: { query: string; parameters: unknown[] }[] = [];
  const recording = postgres(inject("databaseUrl"), {
    max: 1,
    onnotice: () => {},
    debug: (_connection, query, parameters) => sent.push({ query, parameters }),
  });
  try {
    await relayBothOnce(recording);
    const pass = sent.find((statement) => statement.query.includes("event_batch"));
    if (!pass) throw new Error("the relay pass sent no statement");
    let plan: PlanNode = {};
    await sql
      .begin(async (tx) => {
        await prepare(tx);
        plan = await explainGenericPlan(tx, pass.query, pass.parameters);
        throw new RolledBack();
      })
      .catch((error: unknown) => {
        if (!(error instanceof RolledBack)) throw error;
      });
    return plan;
  } finally {
    await recording.end({ timeout: 5 });
  }
}

class RolledBack extends Error {}
