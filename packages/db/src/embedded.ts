import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import path from "node:path";
import postgres from "postgres";
import EmbeddedPostgres from "./embedded-postgres.js";

export interface EmbeddedDatabase {
  url: string;
  /** Stops the server when this process started it; a no-op when it joined a running one. */
  stop(): Promise<void>;
}

interface ConnectionFile {
  port: number;
  user: string;
  password: string;
}

const DATABASE_NAME = "parley";

/**
 * Starts (or joins) the zero-configuration PostgreSQL kept under `dataDir`.
 * `pnpm start` starts it; `pnpm admin` joins the running one, or starts it briefly.
 */
export async function startEmbeddedDatabase(
  dataDir: string,
  log: (line: string) => void = () => {},
): Promise<EmbeddedDatabase> {
  const root = path.resolve(dataDir);
  const databaseDir = path.join(root, "postgres");
  const connectionPath = path.join(root, "connection.json");
  const existing = await readConnectionFile(connectionPath);

  if (existing && (await isReachable(urlFor(existing, "postgres")))) {
    await ensureDatabase(existing);
    return { url: urlFor(existing, DATABASE_NAME), stop: async () => {} };
  }

  const connection: ConnectionFile = existing ?? {
    port: 0,
    user: "parley",
    password: randomBytes(18).toString("base64url"),
  };
  connection.port = await findFreePort();
  await mkdir(root, { recursive: true, mode: 0o755 });
  // As root, PostgreSQL runs as the `postgres` OS user, which must be able to reach its data.
  await chmod(root, 0o755);

  const server = new EmbeddedPostgres({
    databaseDir,
    port: connection.port,
    user: connection.user,
    password: connection.password,
    authMethod: "scram-sha-256",
    persistent: true,
    // PostgreSQL refuses to run as root; the package creates a `postgres` OS user then.
    createPostgresUser: true,
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", `unix_socket_directories=`],
    onLog: (message) => log(message.trim()),
    onError: (error) => log(String(error)),
  });
  if (!(await exists(path.join(databaseDir, "PG_VERSION")))) {
    await server.initialise();
  }
  await server.start();
  await writeFile(connectionPath, JSON.stringify(connection), { mode: 0o600 });
  await chmod(connectionPath, 0o600);
  await ensureDatabase(connection);
  return { url: urlFor(connection, DATABASE_NAME), stop: () => server.stop() };
}

function urlFor(connection: ConnectionFile, database: string): string {
  const password = encodeURIComponent(connection.password);
  return `postgres://${connection.user}:${password}@127.0.0.1:${connection.port}/${database}`;
}

async function readConnectionFile(file: string): Promise<ConnectionFile | undefined> {
  try {
    return JSON.parse(await readFile(file, "utf8")) as ConnectionFile;
  } catch {
    return undefined;
  }
}

async function isReachable(url: string): Promise<boolean> {
  const sql = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
  try {
    await sql`select 1`;
    return true;
  } catch {
    return false;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

async function ensureDatabase(connection: ConnectionFile): Promise<void> {
  const sql = postgres(urlFor(connection, "postgres"), { max: 1, onnotice: () => {} });
  try {
    const found = await sql`select 1 from pg_database where datname = ${DATABASE_NAME}`;
    if (found.length === 0) {
      await sql.unsafe(`create database ${DATABASE_NAME}`).catch((error: { code?: string }) => {
        // Another process created it between our check and our create.
        if (error.code !== "42P04") throw error;
      });
    }
  } finally {
    await sql.end({ timeout: 1 });
  }
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

export function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === "object") resolve(address.port);
        else reject(new Error("no port"));
      });
    });
  });
}
