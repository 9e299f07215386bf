import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";

/** The built start of `pnpm start`, the worker on its own and `pnpm admin`. */
export const apiDist = path.resolve(import.meta.dirname, "../dist");
export const workerDist = path.resolve(import.meta.dirname, "../../worker/dist");

export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The process's environment without anything of the test run's that would change the start. */
export function baseEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const {
    DATABASE_URL: _url,
    NODE_ENV: _env,
    PARLEY_SECRETS_KEY: _key,
    PARLEY_SECRETS_KEY_PREVIOUS: _previous,
    ...rest
  } = process.env;
  return { ...rest, LOG_LEVEL: "warn", ...extra };
}

export function runToEnd(
  script: string,
  args: string[],
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { env: baseEnv(env), stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${path.basename(script)} still ran after ${timeoutMs} ms; output:\n${stdout}${stderr}`));
    }, timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Command lines of every process of this machine (Linux `/proc`): what is left running. */
export async function runningCommandLines(): Promise<string[]> {
  if (!existsSync("/proc/self/cmdline")) return [];
  const lines: string[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const text = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    if (text) lines.push(text.replaceAll("\0", " "));
  }
  return lines;
}

export interface StartedProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/**
 * Starts `script` (under Node's `nodeArgs`) and resolves once its output matches `ready`
 * (bounded); rejects if it exits first.
 */
export async function startUntil(
  script: string,
  env: Record<string, string>,
  ready: RegExp,
  timeoutMs = 60_000,
  nodeArgs: string[] = [],
): Promise<StartedProcess> {
  const child = spawn(process.execPath, [...nodeArgs, script], {
    env: baseEnv(env),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const deadline = Date.now() + timeoutMs;
  while (!ready.test(output)) {
    if (child.exitCode !== null) throw new Error(`${path.basename(script)} exited with ${child.exitCode}:\n${output}`);
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`${path.basename(script)} did not become ready:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { child, output: () => output, exited };
}
