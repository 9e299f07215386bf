import { JOB_QUEUE_REVISION } from "@parley/core";
import { createDatabaseClient } from "@parley/db";
import { installJobQueue } from "@parley/worker";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { QUIET_WINDOW_MS, QUIET_WRITES, RequestRelay } from "./request-relay.js";

/** A database of its own, migrated by neither Parley nor graphile-worker: an API started before any worker. */
const admin = createDatabaseClient(inject("databaseUrl"), { max: 1 });
const name = `parley_relay_${process.pid}_${Date.now().toString(36)}`;
const url = new URL(inject("databaseUrl"));
url.pathname = `/${name}`;
const client = createDatabaseClient(url.toString(), { max: 2 });

beforeAll(async () => {
  await admin.sql.unsafe(`create database ${name}`);
});

afterAll(async () => {
  await client.close();
  await admin.sql.unsafe(`drop database if exists ${name} with (force)`);
  await admin.close();
});

/** Polls `done` every 10 ms for at most 5 s; the caller asserts what it waited for. */
async function pollUntil(done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!(await done()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
}

async function callsOfStandIn(): Promise<number> {
  const [row] = await client.sql<{ calls: number }[]>`select last_value::int as calls from refusing_queue_calls`;
  return row?.calls ?? 0;
}

describe("RequestRelay", () => {
  it("relays nothing in requests until the job queue's schema exists, then finds it by looking again", async () => {
    const relay = new RequestRelay({ queueCheckMs: 20 });
    // Looks in the middle of graphile-worker's migration (every 20 ms) find it not ready:
    // none calls an `add_jobs` the migration drops later, and none fails.
    const errors: unknown[] = [];
    try {
      await relay.watchQueue(client.sql, (error) => errors.push(error));
      expect(relay.now()).toBe(false);
      expect(errors).toEqual([]);

      await installJobQueue(url.toString());
      await pollUntil(async () => relay.now());
      expect(relay.now()).toBe(true);
      expect(errors).toEqual([]);
      // The revision waited for is the one the worker's graphile-worker installs.
      const [schema] = await client.sql<{ revision: number }[]>`
        select max(id)::int as revision from graphile_worker.migrations`;
      expect(schema?.revision).toBe(JOB_QUEUE_REVISION);
    } finally {
      relay.close();
    }
  });

  it("waits for the whole migration: add_jobs there, the last revision not yet, is not ready", async () => {
    const [last] = await client.sql<{ id: number; ts: Date; breaking: boolean }[]>`
      delete from graphile_worker.migrations where id = ${JOB_QUEUE_REVISION} returning id, ts, breaking`;
    const relay = new RequestRelay({ queueCheckMs: 20 });
    const errors: unknown[] = [];
    try {
      await relay.watchQueue(client.sql, (error) => errors.push(error));
      expect(relay.now()).toBe(false);
      if (!last) throw new Error("graphile-worker's last migration was not recorded");
      // The last migration commits: the next look finds the queue.
      await client.sql`insert into graphile_worker.migrations ${client.sql(last)}`;
      await pollUntil(async () => relay.now());
      expect(relay.now()).toBe(true);
      expect(errors).toEqual([]);
    } finally {
      relay.close();
    }
  });

  it("keeps the outbox when the job queue is there but out of this role's reach, and says so once", async () => {
    // What a role without the job queue's privileges meets: add_jobs exists, and refuses.
    await client.sql.unsafe(`
      create sequence refusing_queue_calls;
      create schema refusing_queue;
      create type refusing_queue.job_spec as (identifier text);
      create table refusing_queue.migrations (id int primary key);
      insert into refusing_queue.migrations values (${JOB_QUEUE_REVISION});
      create function refusing_queue.add_jobs(specs refusing_queue.job_spec[], preserve boolean default false)
      returns void language plpgsql as $$ begin
        -- Counted outside the transaction, which the refusal aborts.
        perform nextval('public.refusing_queue_calls');
        raise exception 'permission denied for table _private_jobs';
      end $$;
      alter schema refusing_queue rename to graphile_worker_stand_in`);
    const errors: unknown[] = [];
    const relay = new RequestRelay({ queueCheckMs: 20 });
    try {
      // The stand-in is looked for under the real name, as the API would meet it.
      await client.sql.unsafe("alter schema graphile_worker rename to graphile_worker_real");
      await client.sql.unsafe("alter schema graphile_worker_stand_in rename to graphile_worker");
      await relay.watchQueue(client.sql, (error) => errors.push(error));
      // Three looks, each refused.
      await pollUntil(async () => (await callsOfStandIn()) >= 3);
      expect(await callsOfStandIn()).toBeGreaterThanOrEqual(3);
      expect(relay.now()).toBe(false);
      expect(errors).toHaveLength(1);
      expect(String(errors[0])).toContain("permission denied");

      // The real queue back in place: found by the next look.
      await client.sql.unsafe("alter schema graphile_worker rename to graphile_worker_stand_in");
      await client.sql.unsafe("alter schema graphile_worker_real rename to graphile_worker");
      await pollUntil(async () => relay.now());
      expect(relay.now()).toBe(true);
    } finally {
      relay.close();
    }
  });

  it("lets writes relay their own jobs while fewer than 20 began in 100 ms, and marks the one in flight", async () => {
    let time = 1_000;
    const relay = new RequestRelay({ clock: () => time });
    await relay.watchQueue(client.sql, () => {});
    const first = relay.writeBegan();
    expect(relay.now()).toBe(true);
    expect(first.relayedItself).toBe(true);
    // Two in flight, still quiet: which one asks is not known, so the second is not marked.
    const second = relay.writeBegan();
    expect(relay.now()).toBe(true);
    expect(second.relayedItself).toBe(false);
    relay.writeEnded(first);
    relay.writeEnded(second);
    relay.close();

    // A write told yes, then nineteen more begun within 100 ms: busy, and the first, told
    // no when one of them asks, is unmarked (it may have written to the outbox since).
    const busy = new RequestRelay({ clock: () => time });
    await busy.watchQueue(client.sql, () => {});
    const lone = busy.writeBegan();
    expect(busy.now()).toBe(true);
    expect(lone.relayedItself).toBe(true);
    const others = Array.from({ length: QUIET_WRITES - 1 }, () => busy.writeBegan());
    expect(busy.now()).toBe(false);
    expect(lone.relayedItself).toBe(false);
    for (const write of [lone, ...others]) busy.writeEnded(write);
    // Once the window has passed the first of them: quiet again.
    time += QUIET_WINDOW_MS + 1;
    expect(busy.now()).toBe(true);
    busy.close();
  });
});
