import { randomBytes } from "node:crypto";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import postgres from "postgres";
import { embeddedPostgresBinaries, findFreePort } from "./embedded.js";
import EmbeddedPostgres from "./embedded-postgres.js";

export interface ScratchPostgres {
  /** The empty `parley` database. */
  url: string;
  /** The server, which its owner may stop and start again on the same data and port. */
  server: EmbeddedPostgres;
  /** Stops the server (when running) and removes its data. */
  destroy(): Promise<void>;
}

/**
 * A PostgreSQL server of its own in a temporary directory, for a test file or the soak that
 * must stop, kill or restart it (the run's shared server never goes down). The embedded
 * server's settings; `flags` adds `-c` settings.
 */
export async function startScratchPostgres(flags: string[] = []): Promise<ScratchPostgres> {
  const dir = await mkdtemp(path.join(tmpdir(), "parley-scratch-pg-"));
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
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", ...flags],
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
  return {
    url: `postgres://parley:${password}@127.0.0.1:${port}/parley`,
    server,
    async destroy() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
