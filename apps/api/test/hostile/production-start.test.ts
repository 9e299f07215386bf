import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { findFreePort } from "@parley/db";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiDist, runToEnd, type StartedProcess, startUntil } from "../start-processes.js";

/**
 * Issue 21, items 12 and 16: production never prints working keys, and an embedded
 * PostgreSQL orphaned by a kill -9 is adopted by the next start and stopped with it.
 */
const main = path.join(apiDist, "main.js");
const listening = /Parley is listening/;
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "parley-production-start-"));
  await chmod(scratch, 0o755);
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

async function stop(started: StartedProcess): Promise<number | null> {
  if (started.child.exitCode === null) started.child.kill("SIGTERM");
  return started.exited;
}

async function connectionOf(dataDir: string): Promise<{ url: string; postmasterPid: number }> {
  const file = JSON.parse(await readFile(path.join(dataDir, "connection.json"), "utf8")) as {
    port: number;
    user: string;
    password: string;
  };
  const pidFile = await readFile(path.join(dataDir, "postgres", "postmaster.pid"), "utf8");
  return {
    url: `postgres://${file.user}:${encodeURIComponent(file.password)}@127.0.0.1:${file.port}/parley`,
    postmasterPid: Number.parseInt(pidFile.split("\n")[0] ?? "", 10),
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function pollUntil(condition: () => Promise<boolean>, what: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function waitUntil(condition: () => boolean, what: string, timeoutMs = 30_000) {
  await pollUntil(async () => condition(), what, timeoutMs);
}

/**
 * Each test starts `pnpm start` once or twice: on a machine loaded by a parallel test run a
 * start took over 60 s (its bound, START_MS), the file over 5 minutes.
 */
const START_MS = 120_000;
const STARTS = { timeout: 4 * START_MS };

describe("NODE_ENV=production on an empty database (item 12)", STARTS, () => {
  it("creates no demo organization and prints no key", async () => {
    const dataDir = path.join(scratch, "production");
    const started = await startUntil(
      main,
      {
        NODE_ENV: "production",
        PARLEY_SECRETS_KEY: randomBytes(32).toString("hex"),
        DATA_DIR: dataDir,
        PORT: String(await findFreePort()),
        LOG_LEVEL: "info",
      },
      listening,
      START_MS,
    );
    const { url } = await connectionOf(dataDir);
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      // The log line comes after the demo step would have run.
      await waitUntil(() => /no demo organization/.test(started.output()), "the production notice");
      const [row] = await sql<{ count: number }[]>`select count(*)::int as count from organizations`;
      expect(row?.count).toBe(0);
    } finally {
      await sql.end({ timeout: 1 });
    }
    expect(started.output()).not.toMatch(/parley_(live|test)_|live key:/);
    expect(await stop(started)).toBe(0);
  });

  it("a start refused for a missing PARLEY_SECRETS_KEY leaves no database and no organization behind", async () => {
    const dataDir = path.join(scratch, "production-without-key");
    const result = await runToEnd(main, [], { NODE_ENV: "production", DATA_DIR: dataDir, PORT: "0" });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/PARLEY_SECRETS_KEY is required/);
    expect(existsSync(path.join(dataDir, "postgres"))).toBe(false);
    expect(result.stdout).not.toMatch(/parley_(live|test)_/);
  });
});

describe("after kill -9 of pnpm start (item 16)", STARTS, () => {
  it("the next start adopts the embedded PostgreSQL left running and stops it on exit", async () => {
    const dataDir = path.join(scratch, "killed");
    const env = { DATA_DIR: dataDir, LOG_LEVEL: "info" };
    const first = await startUntil(main, { ...env, PORT: String(await findFreePort()) }, listening, START_MS);
    const { postmasterPid } = await connectionOf(dataDir);
    first.child.kill("SIGKILL");
    await first.exited;
    expect(alive(postmasterPid)).toBe(true);

    const second = await startUntil(main, { ...env, PORT: String(await findFreePort()) }, listening, START_MS);
    // The same server, adopted: not a second one.
    expect((await connectionOf(dataDir)).postmasterPid).toBe(postmasterPid);
    expect(await stop(second)).toBe(0);
    await waitUntil(() => !alive(postmasterPid), "the adopted PostgreSQL to stop");
    expect(existsSync(path.join(dataDir, "postgres", "postmaster.pid"))).toBe(false);
  });

  it("a SIGTERM while the adopting start still reads the database for its demo step exits 0 (issue 39, item 1)", async () => {
    const dataDir = path.join(scratch, "killed-then-stopped-early");
    const env = { DATA_DIR: dataDir, LOG_LEVEL: "info" };
    const first = await startUntil(main, { ...env, PORT: String(await findFreePort()) }, listening, START_MS);
    const { url, postmasterPid } = await connectionOf(dataDir);
    first.child.kill("SIGKILL");
    await first.exited;

    // Under load the demo step (after "listening") was still reading when SIGTERM came, and
    // the shutdown stopped PostgreSQL under it: exit 1. A lock holds that read here.
    const sql = postgres(url, { max: 2, onnotice: () => {} });
    const holder = await sql.reserve();
    await holder`begin`;
    await holder`lock table organizations in access exclusive mode`;
    const second = await startUntil(main, { ...env, PORT: String(await findFreePort()) }, listening, START_MS);
    await pollUntil(async () => {
      const [row] = await sql<{ waiting: number }[]>`
        select count(*)::int as waiting from pg_stat_activity
        where wait_event_type = 'Lock' and query ilike '%organizations%'`;
      return (row?.waiting ?? 0) > 0;
    }, "the demo step to wait on the lock");
    second.child.kill("SIGTERM");
    await pollUntil(
      async () => second.child.exitCode !== null || /waiting for the start's last step/.test(second.output()),
      "the shutdown to wait for the demo step, or the process to exit",
    );
    // It waits: PostgreSQL is not stopped under the step's statement.
    expect(second.child.exitCode, second.output()).toBeNull();
    await holder`rollback`.catch(() => {});
    holder.release();
    await sql.end({ timeout: 1 }).catch(() => {});

    expect(await second.exited, second.output()).toBe(0);
    expect(second.output()).not.toMatch(/Parley cannot start/);
    await waitUntil(() => !alive(postmasterPid), "the adopted PostgreSQL to stop");
  });
});
