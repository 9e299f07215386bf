import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { buildApi } from "../scripts/build-api.mjs";

export const root = fileURLToPath(new URL("..", import.meta.url));

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Node options from an environment variable, separated by white space (none when it is unset or blank). */
export function nodeOptionsFrom(variable) {
  return (process.env[variable] ?? "").split(/\s+/).filter(Boolean);
}

/**
 * The API and the worker run as docs/operations.md runs them in production (with a young
 * generation of 32 MB semi-spaces). `BENCH_CPU_PROF_DIR`: they also write V8 CPU profiles
 * there when they exit; `BENCH_NODE_ARGS`: more Node options for both, space-separated.
 */
const nodeArgs = [
  "--max-semi-space-size=32",
  ...(process.env.BENCH_CPU_PROF_DIR ? ["--cpu-prof", "--cpu-prof-dir", process.env.BENCH_CPU_PROF_DIR] : []),
  ...nodeOptionsFrom("BENCH_NODE_ARGS"),
];

/** Spawns a Node process, keeping its last output for error messages (and in BENCH_PROC_LOG_DIR). */
function spawnNode(script, env) {
  const child = spawn(process.execPath, [...nodeArgs, script], { env, stdio: ["ignore", "pipe", "pipe"] });
  const state = { child, output: "" };
  const keep = (chunk) => {
    state.output = (state.output + chunk).slice(-2_000_000);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  logOutputOf(child, path.basename(path.dirname(path.dirname(script))));
  return state;
}

/**
 * `BENCH_PROC_LOG_DIR`: everything the process writes, appended to `<name>.<pid>.log` there
 * (with `BENCH_NODE_ARGS=--trace-gc`, its garbage collections).
 */
export function logOutputOf(child, name) {
  const dir = process.env.BENCH_PROC_LOG_DIR;
  if (!dir) return;
  const file = path.join(dir, `${name}.${child.pid}.log`);
  child.stdout.on("data", (chunk) => appendFileSync(file, chunk));
  child.stderr.on("data", (chunk) => appendFileSync(file, chunk));
}

async function kill(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

/** The embedded PostgreSQL of a DATA_DIR, as `packages/db/src/embedded.ts` wrote it. */
export async function databaseUrlOf(dataDir, database = "parley") {
  const connection = JSON.parse(await readFile(path.join(dataDir, "connection.json"), "utf8"));
  const password = encodeURIComponent(connection.password);
  return `postgres://${connection.user}:${password}@127.0.0.1:${connection.port}/${database}`;
}

/**
 * Every bench API process's environment: on `port` of the loopback, logging warnings only,
 * the rate limit out of the way (each request is still counted).
 */
function apiEnv(port) {
  return {
    ...process.env,
    PORT: String(port),
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    RATE_LIMIT_PER_MINUTE: "100000000",
  };
}

/**
 * Starts `apps/api/dist/main.js` on a fresh embedded database; prints nothing of its own.
 * By default the worker runs inside the API process (`pnpm start`). With
 * `{ separateWorker: true }` it is production-shaped: the API with `RUN_WORKER=false` and
 * one standalone `apps/worker/dist/main.js` on the same database (`workerEnv` adds to its
 * environment); `worker.stop()` and `worker.start()` stop and restart that process.
 */
export async function startParley(env = {}, options = {}) {
  buildApi();
  const dataDir = await mkdtemp(path.join(tmpdir(), "parley-bench-"));
  const port = await freePort();
  const api = spawnNode(path.join(root, "apps/api/dist/main.js"), {
    ...apiEnv(port),
    DATA_DIR: dataDir,
    ...(options.separateWorker ? { RUN_WORKER: "false" } : {}),
    ...env,
  });
  const deadline = Date.now() + 60_000;
  while (!/test key:\s+(\S+)/.test(api.output)) {
    if (api.child.exitCode !== null || Date.now() > deadline) {
      await kill(api.child);
      throw new Error(`Parley did not start:\n${api.output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const testKey = /test key:\s+(\S+)/.exec(api.output)[1];
  const liveKey = /live key:\s+(\S+)/.exec(api.output)[1];
  const databaseUrl = await databaseUrlOf(dataDir);
  const publicBaseUrl = `http://127.0.0.1:${port}`;

  let worker;
  if (options.separateWorker) {
    const workerEnv = {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PUBLIC_BASE_URL: publicBaseUrl,
      LOG_LEVEL: "warn",
      ...options.workerEnv,
    };
    let current;
    worker = {
      get pid() {
        return current?.child.pid;
      },
      get output() {
        return current?.output ?? "";
      },
      /** Starts the worker process (a no-op while it runs). */
      async start() {
        if (current && current.child.exitCode === null) return;
        current = spawnNode(path.join(root, "apps/worker/dist/main.js"), workerEnv);
        // At LOG_LEVEL=warn a worker that starts well prints nothing: give it a second and
        // fail if it exited meanwhile. Callers that need it working wait for a job it runs.
        await new Promise((resolve) => setTimeout(resolve, 1000));
        if (current.child.exitCode !== null) throw new Error(`the worker exited:\n${current.output}`);
      },
      async stop() {
        if (current) await kill(current.child);
      },
    };
    try {
      await worker.start();
    } catch (error) {
      await kill(api.child);
      await rm(dataDir, { recursive: true, force: true });
      throw error;
    }
  }

  return {
    dataDir,
    databaseUrl,
    publicBaseUrl,
    baseUrl: `${publicBaseUrl}/v1`,
    testKey,
    liveKey,
    pid: api.child.pid,
    worker,
    get output() {
      return api.output;
    },
    async stop() {
      // The worker first: the API process owns the embedded PostgreSQL and stops it.
      await worker?.stop();
      await kill(api.child);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * One more API process on an existing database (`DATABASE_URL`, `RUN_WORKER=false`), with
 * `env` added, from the build at `buildRoot` (this checkout's by default): the two sides of
 * an A/B (bench/README.md, "What each lever earns"). Ready once
 * GET /healthz answers 200.
 */
export async function startApiProcess(databaseUrl, env = {}, buildRoot = root) {
  const port = await freePort();
  const api = spawnNode(path.join(buildRoot, "apps/api/dist/main.js"), {
    ...apiEnv(port),
    DATABASE_URL: databaseUrl,
    RUN_WORKER: "false",
    ...env,
  });
  const publicBaseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ready = await fetch(`${publicBaseUrl}/healthz`).then(
      (response) => response.status === 200,
      () => false,
    );
    if (ready) break;
    if (api.child.exitCode !== null || Date.now() > deadline) {
      await kill(api.child);
      throw new Error(`an API process did not start:\n${api.output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    baseUrl: `${publicBaseUrl}/v1`,
    pid: api.child.pid,
    stop: () => kill(api.child),
  };
}

export function client(baseUrl, key) {
  return async function request(method, pathname, body, headers = {}) {
    const response = await fetch(baseUrl + pathname, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}), ...headers },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await response.text();
    if (response.status >= 400) throw new Error(`${method} ${pathname}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
}

export function percentile(sorted, p) {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

export function printTable(rows) {
  const widths = Object.keys(rows[0]).map((key) => Math.max(key.length, ...rows.map((row) => String(row[key]).length)));
  const line = (cells) => cells.map((cell, i) => String(cell).padEnd(widths[i])).join("  ");
  console.log(line(Object.keys(rows[0])));
  for (const row of rows) console.log(line(Object.values(row)));
}
