import { createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { checkDatabase } from "./database-check.js";
import { StartupError } from "./startup-error.js";

/**
 * A server that resets every connection as it arrives: what a client sees of a PostgreSQL
 * killed or restarting in the handshake (the soak's worker restarted beside it).
 */
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

describe("a start against a PostgreSQL that resets the connection", () => {
  it("says so in one line, as a startup error to try again, never an unexpected one", async () => {
    const { server, port } = await resettingServer();
    open = server;
    const url = `postgres://parley:secret@127.0.0.1:${port}/parley`;
    const failure = await checkDatabase(url, "DATABASE_URL").then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(StartupError);
    expect((failure as Error).message).toBe(
      `Cannot connect to the PostgreSQL of DATABASE_URL (parley@127.0.0.1:${port}/parley): the server reset the connection (it is stopping or restarting). Try again in a moment, or check DATABASE_URL.`,
    );
  });
});
