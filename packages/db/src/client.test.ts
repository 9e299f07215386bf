import { randomBytes } from "node:crypto";
import { type AddressInfo, connect, createServer, type Server } from "node:net";
import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDatabaseClient, type DatabaseClient } from "./client.js";
import { asJsonb } from "./jsonb.js";
import { reusableQuery, reusableRawQuery } from "./reusable-query.js";
import { organizations } from "./tables/index.js";
import { startTestDatabase } from "./test-database.js";

/**
 * A TCP relay to PostgreSQL, the client as it talks to a server across a network;
 * `onClientData` sees each chunk the client sends.
 */
async function startRelay(databaseUrl: string, onClientData?: (chunk: Buffer) => void) {
  const target = new URL(databaseUrl);
  const server = createServer((incoming) => {
    const outgoing = connect(Number(target.port), target.hostname);
    if (onClientData) incoming.on("data", onClientData);
    incoming.pipe(outgoing).pipe(incoming);
    incoming.on("error", () => outgoing.destroy());
    outgoing.on("error", () => incoming.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = new URL(databaseUrl);
  url.port = String((server.address() as AddressInfo).port);
  return { server, url: url.toString() };
}

describe("the database client", () => {
  let database: { url: string; stop(): Promise<void> };
  let client: DatabaseClient;

  beforeAll(async () => {
    database = await startTestDatabase();
    // One connection: every statement of a test shares the session it inspects.
    client = createDatabaseClient(database.url, { max: 1 });
  });

  afterAll(async () => {
    await client?.close();
    await database?.stop();
  });

  const preparedStatements = async () => {
    const rows = await client.db.execute<{ statement: string }>(
      sql`select statement from pg_prepared_statements where not from_sql`,
    );
    return rows.map((row) => row.statement);
  };

  it("runs drizzle's queries as statements prepared once per connection", async () => {
    const id = `org_${Date.now()}`;
    for (let i = 0; i < 3; i++) {
      await client.db.select().from(organizations).where(eq(organizations.id, id));
    }
    const statements = (await preparedStatements()).filter((text) => text.includes('from "organizations"'));
    expect(statements).toHaveLength(1);
  });

  it("prepares the statements of transactions and savepoints too", async () => {
    const marker = `savepoint_${Date.now()}`;
    await client.db.transaction(async (tx) => {
      await tx.execute(sql`select ${marker}::text as marker, 1 as outer_level`);
      await tx.transaction(async (inner) => {
        await inner.execute(sql`select ${marker}::text as marker, 2 as inner_level`);
      });
    });
    const statements = (await preparedStatements()).filter((text) => text.includes("_level"));
    expect(statements.some((text) => text.includes("outer_level"))).toBe(true);
    expect(statements.some((text) => text.includes("inner_level"))).toBe(true);
  });

  it("runs a reusable query on whichever handle it is given: the pool or an open transaction", async () => {
    const insertOrganization = reusableQuery((db) =>
      db
        .insert(organizations)
        .values({ id: sql.placeholder("id"), name: sql.placeholder("name") })
        .returning()
        .prepare("test_insert_organization"),
    );
    const findOrganization = reusableQuery((db) =>
      db
        .select()
        .from(organizations)
        .where(eq(organizations.id, sql.placeholder("id")))
        .prepare("test_find_organization"),
    );
    const kept = `org_kept_${Date.now()}`;
    const rolledBack = `org_rolled_back_${Date.now()}`;

    const [inserted] = await insertOrganization(client.db, { id: kept, name: "Kept" });
    expect(inserted).toMatchObject({ id: kept, name: "Kept" });
    expect(inserted?.createdAt).toBeInstanceOf(Date);

    await expect(
      client.db.transaction(async (tx) => {
        await insertOrganization(tx, { id: rolledBack, name: "Rolled back" });
        // Seen inside the transaction it was written in...
        expect(await findOrganization(tx, { id: rolledBack })).toHaveLength(1);
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    // ...and gone with it: the statement ran on the transaction's connection, not the pool's.
    expect(await findOrganization(client.db, { id: rolledBack })).toHaveLength(0);
    expect(await findOrganization(client.db, { id: kept })).toHaveLength(1);
  });

  it("answers a reusable raw query with rows as arrays and where each column is among them", async () => {
    const findOrganizations = reusableRawQuery<{ id: string }>((db) =>
      db
        .select({ name: organizations.name, id: organizations.id, createdAt: organizations.createdAt })
        .from(organizations)
        .where(eq(organizations.id, sql.placeholder("id"))),
    );
    const id = `org_raw_${Date.now()}`;
    await client.db.insert(organizations).values({ id, name: "Raw" });
    const first = await findOrganizations(client.db, { id });
    expect(first.rows).toHaveLength(1);
    const row = first.rows[0] ?? [];
    expect(row[first.columnIndex.get("id") ?? -1]).toBe(id);
    expect(row[first.columnIndex.get("name") ?? -1]).toBe("Raw");
    // Timestamps stay PostgreSQL's text, for the caller to map.
    expect(typeof row[first.columnIndex.get("created_at") ?? -1]).toBe("string");
    // The same index for every call of the statement: callers may keep what they derive from it.
    const again = await findOrganizations(client.db, { id });
    expect(again.columnIndex).toBe(first.columnIndex);
    await client.db.delete(organizations).where(eq(organizations.id, id));
  });

  describe("transactions", () => {
    // Through a TCP relay: the client as it talks to a server across a network.
    let relay: Server;
    let relayed: DatabaseClient;

    beforeAll(async () => {
      const started = await startRelay(database.url);
      relay = started.server;
      relayed = createDatabaseClient(started.url, { max: 2 });
      await relayed.sql`select 1`;
    });

    afterAll(async () => {
      await relayed?.close();
      relay?.close();
    });

    // A send answers with its inserts still in flight and COMMIT follows them (see
    // Reply.written in apps/api): they must reach the server inside the transaction.
    it("runs statements left in flight when the callback returns inside the transaction, before COMMIT", async () => {
      const startedAt = reusableQuery((db) =>
        db.select({ at: sql<string>`now()::text` }).from(sql`(select 1) as one`).prepare("test_transaction_start"),
      );
      const { inside, inFlight } = await relayed.db.transaction(async (tx) => {
        const [row] = await tx.execute<{ at: string }>(sql`select now()::text as at`);
        const pending = Promise.all([startedAt(tx, {}), tx.execute<{ at: string }>(sql`select now()::text as at`)]);
        pending.catch(() => {});
        return { inside: row?.at, inFlight: pending };
      });
      const [[viaReusable], viaExecute] = await inFlight;
      // now() is the transaction's start: the same only inside the same transaction.
      expect(viaReusable?.at).toBe(inside);
      expect(viaExecute[0]?.at).toBe(inside);
    });

    it("keeps concurrent transactions apart, each on its own connection, and rolls a failed one back", async () => {
      const table = `pipelined_${Date.now()}`;
      await relayed.sql.unsafe(`create table ${table} (id text primary key)`);
      const results = await Promise.allSettled(
        Array.from({ length: 12 }, (_, index) =>
          relayed.db.transaction(async (tx) => {
            await tx.execute(sql.raw(`insert into ${table} values ('a${index}')`));
            // Its own row, so its statements ran on its own connection, inside its transaction.
            const own = await tx.execute<{ id: string }>(sql.raw(`select id from ${table} where id = 'a${index}'`));
            expect(own).toHaveLength(1);
            if (index % 3 === 0) await tx.execute(sql.raw(`insert into ${table} values ('a${index}')`));
          }),
        ),
      );
      const failed = results.flatMap((result, index) => (result.status === "rejected" ? [index] : []));
      expect(failed).toEqual([0, 3, 6, 9]);
      const rows = await relayed.sql.unsafe<{ id: string }[]>(`select id from ${table} order by id`);
      expect(rows.map((row) => row.id).sort()).toEqual(["a1", "a10", "a11", "a2", "a4", "a5", "a7", "a8"]);
      // The pool still answers: no connection was left reserved.
      expect(await relayed.sql`select 2 as two`).toEqual([{ two: 2 }]);
    });
  });

  // PostgreSQL ending a connection mid-statement (a restart, pg_terminate_backend) sends the
  // statement's error, then closes. postgres.js kept that error and handed it to the first
  // statement of the connection opened next, seconds later and unrelated: a worker's stop
  // failed so in CI after a restart ("the database system is shutting down").
  it("gives a statement on a connection opened after PostgreSQL ended the last one its own answer, not that one's error", async () => {
    const victim = createDatabaseClient(database.url, { max: 1 });
    try {
      const [{ pid } = { pid: 0 }] = await victim.sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
      const sleeping = victim.sql`select pg_sleep(10)`.then(
        () => undefined,
        (error: unknown) => error,
      );
      const deadline = Date.now() + 5_000;
      for (;;) {
        const [row] = await client.sql<{ active: boolean }[]>`
          select exists (select 1 from pg_stat_activity where pid = ${pid} and wait_event = 'PgSleep') as active`;
        if (row?.active || Date.now() > deadline) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await client.sql`select pg_terminate_backend(${pid})`;
      // Ended under it (57P01, or the closed connection after it).
      expect(await sleeping).toBeInstanceOf(Error);
      expect(await victim.sql`select 1 as one`).toEqual([{ one: 1 }]);
    } finally {
      await victim.close();
    }
  });

  describe("bytea parameters", () => {
    // Through a TCP relay that counts what the client sends.
    let relay: Server;
    let counted: DatabaseClient;
    let sent = 0;

    beforeAll(async () => {
      const started = await startRelay(database.url, (chunk) => {
        sent += chunk.length;
      });
      relay = started.server;
      counted = createDatabaseClient(started.url, { max: 1 });
      await counted.sql`create temporary table files (id int primary key, name text, data bytea)`;
    });

    afterAll(async () => {
      await counted?.close();
      relay?.close();
    });

    // An attachment's bytes went as hex text: twice their size on the wire, a copy and a
    // string of that size in the process, a hex decoding in the server.
    it("sends bytes as they are, not as hex text, and reads back the same bytes", async () => {
      const bytes = randomBytes(1_000_000);
      // The first bytes of a hex literal (`\x`) must stay bytes too.
      bytes.write("\\x41", 0, "latin1");
      const before = sent;
      await counted.sql`insert into files (id, name, data) values (${1}, ${"photo.jpg"}, ${bytes})`;
      expect(sent - before).toBeGreaterThan(1_000_000);
      expect(sent - before).toBeLessThan(1_010_000);
      const [row] = await counted.sql<{ name: string; data: Buffer }[]>`select name, data from files where id = ${1}`;
      expect(row?.name).toBe("photo.jpg");
      expect(row?.data.equals(bytes)).toBe(true);
    });

    it("keeps every other parameter of the statement as text, and a missing file as NULL", async () => {
      await counted.sql`insert into files (id, name, data) values (${2}, ${"empty"}, ${Buffer.alloc(0)}), (${3}, ${"none"}, ${null})`;
      const rows = await counted.sql<{ id: number; name: string; data: Buffer | null }[]>`
        select id, name, data from files where id in (2, 3) order by id`;
      expect(rows.map((row) => [row.id, row.name, row.data?.length ?? null])).toEqual([
        [2, "empty", 0],
        [3, "none", null],
      ]);
    });
  });

  describe("asJsonb", () => {
    it("orders keys as PostgreSQL's jsonb gives them back, at every depth", async () => {
      const values = [
        { zeta: 1, b: 2, aa: 3, a: 4, é: 5, z: 6, "10": 7, "9": 8, B: 9 },
        { list: [{ y: 1, x: { d: 1, c: 2 } }, "text", 3, null], nested: { b: true, a: false } },
        { "": 1, " ": 2, emoji: "🙂", "🙂": "emoji", undef: undefined },
        [{ b: 1, a: 2 }],
        "plain",
        12.5,
        null,
      ];
      for (const value of values) {
        const [row] = await client.sql<{ stored: string }[]>`select (${JSON.stringify(value)}::jsonb)::text as stored`;
        expect(JSON.stringify(asJsonb(value))).toBe(JSON.stringify(JSON.parse(row?.stored ?? "")));
      }
    });
  });
});

describe("a pool opened at a process's start", () => {
  let database: { url: string; stop(): Promise<void> };
  let admin: DatabaseClient;
  /**
   * A database of the test's own on the shared server, its connections counted by name, and
   * a role that is not a superuser (whom no connection limit binds).
   */
  const scratch = `pool_${randomBytes(4).toString("hex")}`;
  const scratchUrl = () => {
    const url = new URL(database.url);
    url.pathname = `/${scratch}`;
    url.username = scratch;
    url.password = scratch;
    return url.toString();
  };
  const backends = async () => {
    const [row] = await admin.sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity where datname = ${scratch} and backend_type = 'client backend'`;
    return row?.n;
  };

  beforeAll(async () => {
    database = await startTestDatabase();
    admin = createDatabaseClient(database.url, { max: 1 });
    await admin.sql.unsafe(`create role ${scratch} login password '${scratch}'`);
    await admin.sql.unsafe(`create database ${scratch} owner ${scratch} connection limit 3`);
  });

  afterAll(async () => {
    await admin?.sql.unsafe(`drop database if exists ${scratch} with (force)`);
    await admin?.sql.unsafe(`drop role if exists ${scratch}`);
    await admin?.close();
    await database?.stop();
  });

  it("holds every connection of the pool once opened, where postgres.js opens one per statement's need", async () => {
    const pool = createDatabaseClient(scratchUrl(), { max: 3 });
    try {
      await pool.sql`select 1`;
      expect(await backends()).toBe(1);
      await pool.open();
      expect(await backends()).toBe(3);
      // Opened, they serve: three statements at once, three sessions.
      const pids = await Promise.all([1, 2, 3].map(() => pool.sql<{ pid: number }[]>`select pg_backend_pid() as pid`));
      expect(await backends()).toBe(3);
      expect(pids.flat().every((row) => typeof row.pid === "number")).toBe(true);
    } finally {
      await pool.close();
    }
  });

  it("is refused at once, SQLSTATE 53300, by a database that cannot hold it", async () => {
    const pool = createDatabaseClient(scratchUrl(), { max: 4 });
    try {
      const failure = await pool.open().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).toMatchObject({ code: "53300" });
      expect(String((failure as Error).message)).toMatch(/too many connections/);
    } finally {
      await pool.close();
    }
  });
});
