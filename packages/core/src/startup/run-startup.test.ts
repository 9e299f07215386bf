import { createServer, type Server, type Socket } from "node:net";
import { createDatabaseClient } from "@parley/db";
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

async function queryFailure(port: number): Promise<unknown> {
  const client = createDatabaseClient(`postgres://parley:secret@127.0.0.1:${port}/parley`, { max: 1 });
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
  it("says PostgreSQL went away, to try again, not an unexpected error, however the query was wrapped", async () => {
    const { server, port } = await resettingServer();
    open = server;
    const failure = await queryFailure(port);
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

  it("still calls anything else an unexpected error to report", () => {
    expect(startupFailureLine(new Error("something broke"))).toBe(
      "Parley cannot start: unexpected error: something broke (please report it, with the output of LOG_LEVEL=debug)",
    );
  });
});
