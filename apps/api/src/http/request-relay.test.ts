import { createDatabaseClient } from "@parley/db";
import { installJobQueue } from "@parley/worker";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { RequestRelay } from "./request-relay.js";

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

describe("RequestRelay", () => {
  it("relays nothing in requests until the job queue's schema exists, then finds it by looking again", async () => {
    const relay = new RequestRelay(20);
    try {
      await relay.watchQueue(client.sql, (error) => {
        throw error;
      });
      expect(relay.now()).toBe(false);

      await installJobQueue(url.toString());
      const deadline = Date.now() + 5_000;
      while (!relay.now() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(relay.now()).toBe(true);
    } finally {
      relay.close();
    }
  });

  it("lets a write relay its own jobs only while it is the only write in flight", async () => {
    const relay = new RequestRelay();
    await relay.watchQueue(client.sql, () => {});
    relay.writeBegan();
    expect(relay.now()).toBe(true);
    relay.writeBegan();
    expect(relay.now()).toBe(false);
    relay.writeEnded();
    expect(relay.now()).toBe(true);
    relay.writeEnded();
    relay.close();
  });
});
