import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { findFreePort } from "@parley/db";
import { eventually } from "../harness.js";
import { connects } from "./processes.js";

/** Debian's `pgbouncer` package (.ci/run installs it); the tests using it are skipped without it. */
export const PGBOUNCER = process.env.PGBOUNCER_PATH ?? "/usr/sbin/pgbouncer";
export const hasPgBouncer = existsSync(PGBOUNCER);

export interface RunningPgBouncer {
  /** `databaseUrl` with the host and port of the pooler. */
  url: string;
  /** Its log, for failure messages. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * PgBouncer in **transaction** pooling mode in front of the database of `databaseUrl`
 * (same user, password and database name): every transaction may run on another server
 * connection, so session state (prepared statements before PgBouncer 1.21, LISTEN,
 * session advisory locks, `SET`) does not survive between transactions.
 */
export async function startPgBouncer(databaseUrl: string): Promise<RunningPgBouncer> {
  const target = new URL(databaseUrl);
  const database = target.pathname.slice(1);
  const user = decodeURIComponent(target.username);
  const password = decodeURIComponent(target.password);
  const dir = await mkdtemp(path.join(tmpdir(), "parley-pgbouncer-"));
  // As root, PgBouncer refuses to run: it runs as `nobody`, which must read its files.
  await chmod(dir, 0o755);
  const port = await findFreePort();
  await writeFile(path.join(dir, "userlist.txt"), `"${user}" "${password}"\n`, { mode: 0o644 });
  await writeFile(
    path.join(dir, "pgbouncer.ini"),
    [
      "[databases]",
      `${database} = host=${target.hostname} port=${target.port || 5432} dbname=${database}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = scram-sha-256",
      `auth_file = ${path.join(dir, "userlist.txt")}`,
      "pool_mode = transaction",
      "max_client_conn = 1000",
      "default_pool_size = 20",
      "ignore_startup_parameters = extra_float_digits",
      "",
    ].join("\n"),
    { mode: 0o644 },
  );
  const asRoot = process.getuid?.() === 0;
  const child: ChildProcess = spawn(PGBOUNCER, [...(asRoot ? ["-u", "nobody"] : []), path.join(dir, "pgbouncer.ini")], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    output += chunk;
  });
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`pgbouncer exited with ${child.exitCode}:\n${output}`);
      return connects(port);
    },
    (listening) => listening,
    15_000,
  );
  const url = new URL(databaseUrl);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  return {
    url: url.toString(),
    output: () => output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGINT");
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
