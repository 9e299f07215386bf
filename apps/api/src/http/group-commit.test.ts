import { randomUUID } from "node:crypto";
import { createDatabaseClient, type DatabaseClient, postgresClientOf, type Queryable } from "@parley/db";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { GroupAborted, TransactionGroups } from "./group-commit.js";
import { runIdempotent } from "./idempotency.js";

let client: DatabaseClient;
const table = `group_commit_${randomUUID().replaceAll("-", "")}`;

beforeAll(async () => {
  client = createDatabaseClient(inject("databaseUrl"), { max: 4 });
  await client.sql.unsafe(`create table ${table} (name text primary key)`);
});

afterAll(async () => {
  await client.sql.unsafe(`drop table if exists ${table}`);
  await client.close();
});

async function transactionId(tx: Queryable): Promise<string> {
  const [row] = await postgresClientOf(tx)<{ id: string }[]>`select txid_current()::text as id`;
  if (!row) throw new Error("no transaction id");
  return row.id;
}

async function insertName(tx: Queryable, name: string): Promise<void> {
  await postgresClientOf(tx).unsafe(`insert into ${table} (name) values ($1)`, [name]);
}

async function storedNames(): Promise<string[]> {
  const rows = await client.sql.unsafe<{ name: string }[]>(`select name from ${table} order by name`);
  return rows.map((row) => row.name);
}

describe("TransactionGroups", () => {
  it("runs the calls of one turn of the event loop in one transaction, a later call in another", async () => {
    const settled: [number, boolean][] = [];
    const groups = new TransactionGroups(client.db, { onSettled: (...group) => settled.push(group) });
    const together = await Promise.all(["a", "b", "c", "d"].map((key) => groups.run(key, transactionId)));
    expect(new Set(together).size).toBe(1);
    const later = await groups.run("e", transactionId);
    expect(later).not.toBe(together[0]);
    expect(settled).toEqual([
      [4, true],
      [1, true],
    ]);
  });

  it("never puts two calls with one key in one transaction, nor more than its members", async () => {
    const groups = new TransactionGroups(client.db, { maxMembers: 2 });
    const [first, again] = await Promise.all([groups.run("k", transactionId), groups.run("k", transactionId)]);
    expect(first).not.toBe(again);
    const ids = await Promise.all(["x", "y", "z"].map((key) => groups.run(key, transactionId)));
    expect(ids[0]).toBe(ids[1]);
    expect(ids[2]).not.toBe(ids[0]);
  });

  it("commits the others' work when one member refuses, and gives that member its own error", async () => {
    const groups = new TransactionGroups(client.db);
    const refusal = new Error("refused before writing");
    const outcomes = await Promise.allSettled([
      groups.run("one", (tx) => insertName(tx, "refusal-one")),
      groups.run("two", async () => {
        throw refusal;
      }),
      groups.run("three", (tx) => insertName(tx, "refusal-three")),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((outcomes[1] as PromiseRejectedResult).reason).toBe(refusal);
    expect(await storedNames()).toEqual(expect.arrayContaining(["refusal-one", "refusal-three"]));
  });

  it("aborts every member when a statement failed, even one a member caught: nothing commits", async () => {
    const settled: [number, boolean][] = [];
    const groups = new TransactionGroups(client.db, { onSettled: (...group) => settled.push(group) });
    const outcomes = await Promise.allSettled([
      groups.run("one", (tx) => insertName(tx, "aborted-one")),
      groups.run("two", async (tx) => {
        await postgresClientOf(tx)`select 1 / 0`.catch(() => {});
      }),
      groups.run("three", (tx) => insertName(tx, "aborted-three")),
    ]);
    for (const outcome of outcomes) {
      expect(outcome.status).toBe("rejected");
      expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(GroupAborted);
    }
    expect(await storedNames()).not.toContain("aborted-one");
    expect(await storedNames()).not.toContain("aborted-three");
    expect(settled).toEqual([[3, false]]);
  });
});

describe("runIdempotent in a group", () => {
  const tenant = { organizationId: `org_${randomUUID()}`, environment: "test" as const };
  const request = (key: string) => ({ key, tenant, method: "POST", path: "/v1/things", body: { key } });
  const keysStored = async () =>
    (
      await client.sql<{ key: string }[]>`
        select key from idempotency_keys where organization_id = ${tenant.organizationId} order by key`
    ).map((row) => row.key);

  it("runs each member again alone after a failed statement: the others are stored once, the failure is its own", async () => {
    const groups = new TransactionGroups(client.db);
    const run = (key: string, fail: boolean) =>
      runIdempotent(
        client.db,
        request(key),
        async (tx) => {
          await insertName(tx, `idempotent-${key}`);
          // A failure the handler caught: its transaction is aborted all the same.
          if (fail) await postgresClientOf(tx)`select 1 / 0`.catch(() => {});
          return { status: 201, body: { key } };
        },
        undefined,
        groups,
      );
    const outcomes = await Promise.allSettled([run("k1", false), run("k2", true), run("k3", false)]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(await keysStored()).toEqual(["k1", "k3"]);
    const names = await storedNames();
    expect(names.filter((name) => name.startsWith("idempotent-"))).toEqual(["idempotent-k1", "idempotent-k3"]);

    // And a replay of a grouped request answers what it answered.
    const replay = await runIdempotent(
      client.db,
      request("k1"),
      async () => ({ status: 500, body: {} }),
      undefined,
      groups,
    );
    expect(replay.replayed).toBe(true);
    expect(replay.response.text).toBe(JSON.stringify({ key: "k1" }));
  });
});
