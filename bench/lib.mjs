import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
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

/** Starts `apps/api/dist/main.js` (API + worker) on a fresh embedded database; prints nothing of its own. */
export async function startParley(env = {}) {
  buildApi();
  const dataDir = await mkdtemp(path.join(tmpdir(), "parley-bench-"));
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(root, "apps/api/dist/main.js")], {
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      LOG_LEVEL: "warn",
      RATE_LIMIT_PER_MINUTE: "100000000",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  const deadline = Date.now() + 60_000;
  while (!/test key:\s+(\S+)/.test(output)) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`Parley did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const testKey = /test key:\s+(\S+)/.exec(output)[1];
  const liveKey = /live key:\s+(\S+)/.exec(output)[1];
  return {
    dataDir,
    baseUrl: `http://127.0.0.1:${port}/v1`,
    testKey,
    liveKey,
    pid: child.pid,
    async stop() {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
      await rm(dataDir, { recursive: true, force: true });
    },
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
