import { readFileSync } from "node:fs";
import { startScratchPostgres } from "@parley/db";
import { sleep } from "./processes.js";

export interface SoakPostgres {
  url: string;
  /** The postmaster's pid; undefined for a server of the user's own (`DATABASE_URL`). */
  readonly pid: number | undefined;
  /** Every pid of the server's processes (postmaster and backends), for their memory. */
  processIds(): number[];
  /** `kill -9` of the postmaster, then a restart as a supervisor would; resolves when it accepts connections again. */
  crash(): Promise<{ pid: number; restartedInMs: number }>;
  stop(): Promise<void>;
}

/**
 * The soak's PostgreSQL. By default an embedded server of its own in a temporary directory,
 * which the chaos may kill; with `DATABASE_URL`, that server (never killed: the soak does
 * not own it).
 */
export async function startPostgres(databaseUrl: string | undefined): Promise<SoakPostgres> {
  if (databaseUrl) return externalPostgres(databaseUrl);
  // As production would: enough connections for two APIs, two workers and the soak's own.
  // pg_stat_statements: the statements that took its time, for logs/statements.json.
  const scratch = await startScratchPostgres([
    "-c",
    "max_connections=200",
    "-c",
    "shared_preload_libraries=pg_stat_statements",
  ]);
  const { server } = scratch;
  const postmasterPid = () => (server as unknown as { process?: { pid?: number } }).process?.pid;
  return {
    url: scratch.url,
    get pid() {
      return postmasterPid();
    },
    processIds() {
      const pid = postmasterPid();
      return pid === undefined ? [] : [pid, ...childrenOf(pid)];
    },
    async crash() {
      const pid = postmasterPid();
      if (pid === undefined) throw new Error("PostgreSQL is not running");
      const killedAt = performance.now();
      process.kill(pid, "SIGKILL");
      // Until its orphaned backends have gone, a new postmaster refuses to start (their
      // shared memory is still attached): a supervisor tries again.
      for (let attempt = 0; ; attempt++) {
        try {
          await server.start();
          return { pid, restartedInMs: performance.now() - killedAt };
        } catch {
          if (attempt > 300) throw new Error("PostgreSQL did not restart within a minute of its kill");
          await sleep(200);
        }
      }
    },
    stop: () => scratch.destroy(),
  };
}

function externalPostgres(url: string): SoakPostgres {
  return {
    url,
    pid: undefined,
    processIds: () => [],
    crash: () => Promise.reject(new Error("the soak does not kill a PostgreSQL it did not start")),
    stop: async () => {},
  };
}

/** The direct children of a process (PostgreSQL's backends), from /proc. */
function childrenOf(pid: number): number[] {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim();
    return children === "" ? [] : children.split(/\s+/).map(Number);
  } catch {
    return [];
  }
}
