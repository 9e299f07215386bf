import { errorCodeOf, isLostConnection, StartupError } from "@parley/db";

export type Cleanup = () => Promise<unknown> | unknown;

export interface StartupOptions {
  /** Where the one line goes; stderr by default (`pnpm admin` also prints its JSON). */
  report?: (line: string, error: unknown) => void;
}

/**
 * Runs a process's start. A failure prints one line (what is wrong, how to fix it; never a
 * stack), undoes what had started (in reverse order: the embedded PostgreSQL last) and
 * exits 1, so that nothing is left running.
 */
export async function runStartup<T>(
  start: (onFailure: (cleanup: Cleanup) => void) => Promise<T>,
  options: StartupOptions = {},
): Promise<T> {
  const cleanups: Cleanup[] = [];
  try {
    return await start((cleanup) => cleanups.push(cleanup));
  } catch (error) {
    const line = startupFailureLine(error);
    (options.report ?? ((text) => process.stderr.write(`${text}\n`)))(line, error);
    for (const cleanup of cleanups.reverse()) {
      await Promise.resolve()
        .then(cleanup)
        .catch(() => {});
    }
    process.exit(1);
  }
}

/**
 * `StartupError`s as they are; PostgreSQL going away during the start (a restart, a
 * failover: the connection reset, refused or terminated) as what it is, to try again;
 * anything else is a bug, still said in one line.
 */
export function startupFailureLine(error: unknown): string {
  if (error instanceof StartupError) return `Parley cannot start: ${error.message}`;
  const message = error instanceof Error ? error.message : String(error);
  const firstLine = message.split("\n")[0] ?? message;
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : firstLine;
  // node-postgres (graphile-worker's pool) says so in its message alone, with no code.
  if (isLostConnection(error) || /^Connection terminated unexpectedly/.test(cause)) {
    return `Parley cannot start: PostgreSQL went away during the start (${cause.split("\n")[0]}). Try again in a moment, once it accepts connections.`;
  }
  if (errorCodeOf(error) === TOO_MANY_CONNECTIONS) {
    return `Parley cannot start: PostgreSQL refused a connection (${cause.split("\n")[0]}). A process opens its pools at its start: each API process DATABASE_POOL_SIZE connections, each worker 2 x WORKER_CONCURRENCY + 2 (docs/operations.md). Raise PostgreSQL's max_connections, or lower those.`;
  }
  return `Parley cannot start: unexpected error: ${firstLine} (please report it, with the output of LOG_LEVEL=debug)`;
}

/** SQLSTATE 53300: the server's `max_connections`, or a database's or role's connection limit. */
const TOO_MANY_CONNECTIONS = "53300";

/**
 * A server's `listen` failure as one line naming the variable of its port: in use, or a
 * privileged port without the privilege.
 */
export function listenFailure(
  error: unknown,
  where: { variable: string; port: number; hostVariable: string; host: string },
): unknown {
  const { variable, port, hostVariable, host } = where;
  const code = (error as { code?: string } | undefined)?.code;
  if (code === "EADDRINUSE") {
    return new StartupError(
      `${variable} ${port} is already in use on ${host}: stop the program using it, or set ${variable} to a free port.`,
    );
  }
  if (code === "EACCES") {
    return new StartupError(
      `${variable} ${port} needs privileges this process does not have: use a port above 1023, or set ${variable} differently.`,
    );
  }
  if (code === "EADDRNOTAVAIL" || code === "ENOTFOUND") {
    return new StartupError(`${host} is not an address of this machine (${code}): correct ${hostVariable}.`);
  }
  return error;
}
