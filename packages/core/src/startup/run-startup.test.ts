import { createServer, type Server, type Socket } from "node:net";
import { checkDatabase, createDatabaseClient, StartupError } from "@parley/db";
import { afterEach, describe, expect, it } from "vitest";
import { startupFailureLine } from "./run-startup.js";

/** A server that resets every connection as it arrives: a PostgreSQL killed or restarting. */
async function resettingServer(): Promise<{ server: Server; port: number }> {
  const server = createServer((socket: Socket) => socket.resetAndDestroy());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return { server, port: address.port };
}

let open: Server | undefined;
afterEach(() => {
  open?.close();
  open = undefined;
});

async function resettingUrl(): Promise<{ url: string; port: number }> {
  const { server, port } = await resettingServer();
  open = server;
  return { url: `postgres://parley:secret@127.0.0.1:${port}/parley`, port };
}

async function queryFailure(url: string): Promise<unknown> {
  const client = createDatabaseClient(url, { max: 1 });
  try {
    await client.sql`select 1`;
    return undefined;
  } catch (error) {
    return error;
  } finally {
    await client.close().catch(() => {});
  }
}

describe("a start that PostgreSQL's restart interrupts", () => {
  it("checking the database: says the server reset the connection, as a startup error to try again", async () => {
    const { url, port } = await resettingUrl();
    const failure = await checkDatabase(url, "DATABASE_URL").then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(StartupError);
    expect((failure as Error).message).toBe(
      `Cannot connect to the PostgreSQL of DATABASE_URL (parley@127.0.0.1:${port}/parley): the server reset the connection (it is stopping or restarting). Try again in a moment, or check DATABASE_URL.`,
    );
  });

  it("says PostgreSQL went away, to try again, not an unexpected error, however the query was wrapped", async () => {
    const { url } = await resettingUrl();
    const failure = await queryFailure(url);
    expect(failure).toBeInstanceOf(Error);
    expect(startupFailureLine(failure)).toMatch(
      /^Parley cannot start: PostgreSQL went away during the start \(.+\)\. Try again in a moment, once it accepts connections\.$/,
    );
    // As drizzle throws it: its own message (the query), postgres.js's error as the cause.
    const wrapped = new Error('Failed query: insert into "instance_secrets" ...', { cause: failure });
    expect(startupFailureLine(wrapped)).toBe(
      `Parley cannot start: PostgreSQL went away during the start (${(failure as Error).message}). Try again in a moment, once it accepts connections.`,
    );
  });

  it("says the same of node-postgres's lost connection (graphile-worker's pool), which has no code", () => {
    expect(startupFailureLine(new Error("Connection terminated unexpectedly"))).toBe(
      "Parley cannot start: PostgreSQL went away during the start (Connection terminated unexpectedly). Try again in a moment, once it accepts connections.",
    );
  });

  it("says a connection refused for PostgreSQL's connection limit is that, with what each process opens", () => {
    // As postgres.js reports it (packages/db's client.test.ts opens a pool beyond a limit).
    const refused = Object.assign(new Error('too many connections for database "parley"'), { code: "53300" });
    const line = `Parley cannot start: PostgreSQL refused a connection (too many connections for database "parley"). A process opens its pools at its start: each API process DATABASE_POOL_SIZE connections, each worker 2 x WORKER_CONCURRENCY + 2 (docs/operations.md). Raise PostgreSQL's max_connections, or lower those.`;
    expect(startupFailureLine(refused)).toBe(line);
    expect(startupFailureLine(new Error("Failed query: select 1", { cause: refused }))).toBe(line);
  });

  it("still calls anything else an unexpected error to report", () => {
    expect(startupFailureLine(new Error("something broke"))).toBe(
      "Parley cannot start: unexpected error: something broke (please report it, with the output of LOG_LEVEL=debug)",
    );
  });
});
