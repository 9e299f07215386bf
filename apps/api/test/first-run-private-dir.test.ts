import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { findFreePort } from "@parley/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * README's two commands as root in a directory other users cannot enter (a clone in
 * `/root`): PostgreSQL runs as the `postgres` OS user, which cannot reach the binaries or the
 * data inside the clone, so Parley keeps them where it can (docs/operations.md). Run where CI
 * runs as root; elsewhere there is nothing to prove.
 */
const repositoryRoot = path.resolve(import.meta.dirname, "../../..");
const runsAsRoot = process.getuid?.() === 0 && process.platform === "linux";
const pnpm = ["-y", "pnpm@10.34.8"];

/** The environment of a new user's shell: nothing of this test run's. */
function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (/^(VITEST|TURBO|npm_|PNPM|NODE_ENV$|DATABASE_URL$|DATA_DIR$|PORT$|TEST)/i.test(name)) continue;
    env[name] = value;
  }
  return { ...env, ...extra };
}

function run(command: string, args: string[], cwd: string, env = userEnv(), timeoutMs = 240_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(output);
      else reject(new Error(`${command} ${args.join(" ")} exited with ${code}:\n${output.slice(-4000)}`));
    });
  });
}

/** SIGTERM to a process group, then SIGKILL if any of it is still there after 30 s. */
async function stopGroup(groupId: number) {
  const alive = () => {
    try {
      process.kill(-groupId, 0);
      return true;
    } catch {
      return false;
    }
  };
  if (!alive()) return;
  process.kill(-groupId, "SIGTERM");
  const deadline = Date.now() + 30_000;
  while (alive() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  if (alive()) process.kill(-groupId, "SIGKILL");
}

describe.skipIf(!runsAsRoot)("as root, in a 0700 directory: start and a database test work", () => {
  let privateDir: string;
  let clone: string;
  let server: ChildProcess | undefined;

  beforeAll(async () => {
    privateDir = await mkdtemp(path.join(tmpdir(), "parley-private-"));
    expect((await stat(privateDir)).mode & 0o777).toBe(0o700);
    clone = path.join(privateDir, "parley");
    // The working tree as a new user would have it after `git clone`: tracked and new files.
    const files = execFileSync("git", ["ls-files", "-co", "--exclude-standard", "-z"], { cwd: repositoryRoot })
      .toString()
      .split("\0")
      .filter((file) => file !== "");
    execFileSync("mkdir", ["-p", clone]);
    execFileSync("tar", ["-cf", path.join(privateDir, "tree.tar"), "--null", "-T", "-"], {
      cwd: repositoryRoot,
      input: files.join("\0"),
    });
    execFileSync("tar", ["-xf", path.join(privateDir, "tree.tar")], { cwd: clone });
    // And this run's build cache: turbo restores what it built from the same files, as on a
    // machine that built before. Building it all again proves nothing here and took a minute.
    const buildCache = path.join(repositoryRoot, ".turbo");
    if (existsSync(buildCache)) execFileSync("cp", ["-r", buildCache, path.join(clone, ".turbo")]);
    // The packages are already in this machine's store: installed without the network.
    await run("npx", [...pnpm, "install", "--offline", "--frozen-lockfile"], clone);
  }, 300_000);

  afterAll(async () => {
    // The whole process group (npx, pnpm, the server): npx alone once left the server running.
    if (server?.pid !== undefined) await stopGroup(server.pid);
    const connection = await readFile(path.join(clone, ".data", "connection.json"), "utf8").catch(() => "{}");
    const { databaseDir } = JSON.parse(connection) as { databaseDir?: string };
    if (databaseDir) await rm(path.dirname(databaseDir), { recursive: true, force: true });
    await rm(privateDir, { recursive: true, force: true });
  }, 60_000);

  /**
   * `pnpm start` on a port free when chosen. The start takes seconds before it listens (its
   * build, its PostgreSQL), and another test's process can take that port meanwhile: the
   * start then refuses it in one line, and a new port is tried, at most three times.
   */
  async function startOnFreePort(): Promise<{ port: number; output: string }> {
    for (let attempt = 1; ; attempt++) {
      const port = await findFreePort();
      let output = "";
      server = spawn("npx", [...pnpm, "start"], { cwd: clone, env: userEnv({ PORT: String(port) }), detached: true });
      server.stdout?.on("data", (chunk) => {
        output += chunk;
      });
      server.stderr?.on("data", (chunk) => {
        output += chunk;
      });
      const deadline = Date.now() + 240_000;
      while (!/test key:\s+parley_test_/.test(output)) {
        if (server.exitCode !== null) break;
        if (Date.now() > deadline) throw new Error(`pnpm start did not print the demo keys:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      if (server.exitCode === null) return { port, output };
      const portTaken = new RegExp(`PORT ${port} is already in use`).test(output);
      if (!portTaken || attempt === 3) throw new Error(`pnpm start exited with ${server.exitCode}:\n${output}`);
      if (server.pid !== undefined) await stopGroup(server.pid);
    }
  }

  it("pnpm start serves the demo organization's test key", async () => {
    const { port, output } = await startOnFreePort();
    expect(output).not.toMatch(/EACCES|^\s+at /m);
    const testKey = /test key:\s+(parley_test_\w+)/.exec(output)?.[1];
    const response = await fetch(`http://127.0.0.1:${port}/v1/contacts`, {
      headers: { authorization: `Bearer ${testKey}` },
    });
    expect(response.status).toBe(200);
    // The cluster lives outside the private clone, where the postgres user can reach it.
    const connection = JSON.parse(await readFile(path.join(clone, ".data", "connection.json"), "utf8")) as {
      databaseDir?: string;
    };
    expect(connection.databaseDir).toBeDefined();
    expect(connection.databaseDir?.startsWith(privateDir)).toBe(false);
  }, 300_000);

  it("a database test passes there (its own embedded PostgreSQL)", async () => {
    const output = await run(
      "npx",
      [...pnpm, "--filter", "@parley/db", "exec", "vitest", "run", "src/migrations.test.ts"],
      clone,
      userEnv({ NO_COLOR: "1" }),
    );
    // biome-ignore lint/suspicious/noControlCharactersInRegex: colour codes, should a terminal setting force them
    expect(output.replace(/\u001b\[[0-9;]*m/g, "")).toMatch(/Tests\s+1 passed/);
  }, 300_000);
});
