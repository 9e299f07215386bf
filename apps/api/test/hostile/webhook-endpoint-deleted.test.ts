import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { as, type Client, createTestOrganization, eventually, useTestApi, useTestWorker } from "../harness.js";

/**
 * An endpoint deleted while one of its attempts is in flight: the attempt's record has
 * no endpoint left to point to (foreign key, 23503). That is the expected race of a
 * delete, not a fault: the attempt is dropped, nothing is logged as an error, no job is
 * left to retry it, and the API answers the test send with 404, never a 500.
 */
const logs: { level: number; msg?: string; err?: unknown }[] = [];
const logger = pino(
  { level: "debug" },
  new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n").filter(Boolean)) logs.push(JSON.parse(line));
      done();
    },
  }),
);

const api = useTestApi({}, { ownDatabase: true });
useTestWorker(api, { webhookFastRetry: true, logger });

/** Answers `status` to the `deleteOn`-th request of a path (0-based), after deleting that path's endpoint with the API. */
interface Target {
  client: Client;
  endpointId: string;
  deleteOn: number;
  failFirst: boolean;
  received: number;
  deleted: boolean;
}
const targets = new Map<string, Target>();
const server = createServer((req, res) => {
  req.resume();
  req.on("end", async () => {
    const target = targets.get(req.url ?? "");
    if (!target) return void res.writeHead(404).end();
    const index = target.received++;
    if (index === target.deleteOn) {
      const deleted = await target.client.delete(`/webhooks/${target.endpointId}`);
      target.deleted = deleted.status === 200 || deleted.status === 204;
    }
    res.writeHead(target.failFirst && index < target.deleteOn ? 500 : 200).end("ok");
  });
});
let baseUrl = "";
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

let paths = 0;
async function endpointDeletedOn(deleteOn: number, failFirst: boolean) {
  const org = await createTestOrganization(api);
  const client = as(api, org.test);
  const path = `/hook-${++paths}`;
  const created = await client.post("/webhooks", { body: { url: `${baseUrl}${path}`, events: ["contact.created"] } });
  expect(created.status).toBe(201);
  const target: Target = { client, endpointId: created.body.id, deleteOn, failFirst, received: 0, deleted: false };
  targets.set(path, target);
  return { client, target };
}

async function jobsOf(endpointId: string) {
  const [row] = await api.client.sql<{ count: number }[]>`
    select count(*)::int as count from graphile_worker._private_jobs where payload->>'endpoint_id' = ${endpointId}`;
  return row?.count ?? 0;
}

async function deliveryRows(endpointId: string) {
  const [row] = await api.client.sql<{ count: number }[]>`
    select count(*)::int as count from webhook_deliveries where endpoint_id = ${endpointId}`;
  return row?.count ?? 0;
}

function errorsLogged() {
  return logs.filter((entry) => entry.level >= 50);
}

describe("an endpoint deleted during an attempt", () => {
  it("its first attempt (the relay's batch) is dropped without an error log or a job left", async () => {
    const { client, target } = await endpointDeletedOn(0, false);

    expect((await client.post("/contacts", { body: { name: "Ada" } })).status).toBe(201);

    await eventually(
      async () => ({ deleted: target.deleted, jobs: await jobsOf(target.endpointId) }),
      (state) => state.deleted && state.jobs === 0,
    );
    expect(await deliveryRows(target.endpointId)).toBe(0);
    expect(target.received).toBe(1);
    expect(errorsLogged()).toEqual([]);
  });

  it("a retry (a single attempt) is dropped without an error log or a job left", async () => {
    const { client, target } = await endpointDeletedOn(1, true);

    expect((await client.post("/contacts", { body: { name: "Grace" } })).status).toBe(201);

    await eventually(
      async () => ({ deleted: target.deleted, jobs: await jobsOf(target.endpointId) }),
      (state) => state.deleted && state.jobs === 0,
      20_000,
    );
    expect(target.received).toBe(2);
    expect(errorsLogged()).toEqual([]);
  });

  it("POST /webhooks/{id}/test answers 404, not 500, when the endpoint goes meanwhile", async () => {
    const { client, target } = await endpointDeletedOn(0, false);

    const response = await client.post(`/webhooks/${target.endpointId}/test`);

    expect(target.deleted).toBe(true);
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe("resource_not_found");
  });
});
