import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, closeSync, openSync, readFileSync, statSync } from "node:fs";
import { connect } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const root = fileURLToPath(new URL("../..", import.meta.url));

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** What one role's process slot went through: every process it ran, and how each ended. */
export interface ProcessLife {
  pid: number;
  startedAt: number;
  endedAt?: number;
  /**
   * `killed` by the chaos, `exited` on its own (with its code or signal: a crash of ours),
   * `refused` to start (its one line "Parley cannot start: ...", PostgreSQL being away when
   * the supervisor restarted it: by design, and restarted again), `stopped` at the end.
   */
  end?: "killed" | "exited" | "refused" | "stopped";
  exit?: string;
}

/**
 * One supervised process slot (an API or a worker), restarted a second after it ends, as a
 * process supervisor (systemd's `Restart=always`, a container orchestrator) would.
 */
export class Supervised {
  readonly lives: ProcessLife[] = [];
  private child: ChildProcess | undefined;
  private stopping = false;
  private killedPid: number | undefined;

  constructor(
    readonly name: string,
    private readonly script: string,
    private readonly env: NodeJS.ProcessEnv,
    private readonly clock: () => number,
    private readonly onEvent: (line: string) => void,
    /** Resolves once the process serves (its port accepts connections), or is just started. */
    private readonly ready: () => Promise<void>,
    /** Where every process of the slot writes its output (`<name>.log`), for what a run's figures do not say. */
    private readonly logDir: string,
  ) {}

  get pid(): number | undefined {
    return this.child?.exitCode === null && this.child.signalCode === null ? this.child.pid : undefined;
  }

  async start(): Promise<void> {
    this.spawnProcess();
    await this.ready();
  }

  private spawnProcess(): void {
    // The process writes straight into its slot's log file, never into a pipe this process
    // must drain: a soak runner starved of CPU (CI's API suite beside it) cannot hold its
    // writes up, nor its pipes end under it. Three CI soaks saw a worker exit with code 1
    // and not a byte of output, which is how a node process ends whose stdout and stderr
    // pipes were closed (reproduced; the cause in CI was not found): its output, if any,
    // is now in the file. --trace-exit: a process that calls process.exit() says from where.
    const logFile = path.join(this.logDir, `${this.name}.log`);
    const ownOutputFrom = statSync(logFile, { throwIfNoEntry: false })?.size ?? 0;
    const output = openSync(logFile, "a");
    let child: ChildProcess;
    try {
      child = spawn(process.execPath, ["--max-semi-space-size=32", "--trace-exit", this.script], {
        env: this.env,
        stdio: ["ignore", output, output],
      });
    } finally {
      closeSync(output);
    }
    this.child = child;
    const life: ProcessLife = { pid: child.pid ?? 0, startedAt: this.clock() };
    this.lives.push(life);
    appendFileSync(logFile, `--- pid ${child.pid} started at ${(this.clock() / 1000).toFixed(1)} s\n`);
    child.once("exit", (code, signal) => {
      life.endedAt = this.clock();
      life.exit = signal ?? String(code);
      // This process's own output, for its events (a slot's whole output, its predecessors'
      // included, once told the wrong story of a process that exited on its own).
      const ownOutput = ownOutputOf(logFile, ownOutputFrom);
      // Its one line for a start that cannot work; an unexpected error there stays a crash.
      const refusedToStart = /Parley cannot start: (?!unexpected error)/.test(ownOutput);
      if (this.stopping) life.end = "stopped";
      else if (this.killedPid === child.pid) life.end = "killed";
      else if (refusedToStart && code === 1) {
        life.end = "refused";
        const line = /Parley cannot start: .*/.exec(ownOutput)?.[0] ?? ownOutput.trim().split("\n").at(-1);
        this.onEvent(`${this.name} (pid ${child.pid}) refused to start: ${line}`);
      } else {
        life.end = "exited";
        this.onEvent(`${this.name} (pid ${child.pid}) exited on its own: ${life.exit}\n${ownOutput || "(no output)"}`);
      }
      if (this.stopping) return;
      setTimeout(() => {
        if (this.stopping) return;
        this.spawnProcess();
        this.onEvent(`${this.name} restarted (pid ${this.child?.pid})`);
      }, 1_000);
    });
  }

  /** `kill -9`; the supervisor restarts it a second later. */
  kill(): number | undefined {
    const pid = this.pid;
    if (pid === undefined) return undefined;
    this.killedPid = pid;
    process.kill(pid, "SIGKILL");
    return pid;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    await exited;
    clearTimeout(timer);
  }
}

/** What a process wrote to its slot's log since its start (its last 8,000 characters; the pid marker left out). */
function ownOutputOf(logFile: string, from: number): string {
  const written = readFileSync(logFile).subarray(from).toString();
  return written.replace(/^--- pid \d+ started at .*\n/m, "").slice(-8_000);
}

/** Whether a TCP connection to the port is accepted now. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

export async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await sleep(100);
  }
}

/** VmRSS of a process in MB, or undefined once it is gone. */
export function rssMb(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const match = /VmRSS:\s+(\d+) kB/.exec(status);
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Proportional set size in MB (shared pages divided among their sharers), or undefined once gone. */
export function pssMb(pid: number): number | undefined {
  try {
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
    const match = /^Pss:\s+(\d+) kB/m.exec(rollup);
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

export const apiMain = path.join(root, "apps/api/dist/main.js");
export const workerMain = path.join(root, "apps/worker/dist/main.js");
export const adminMain = path.join(root, "apps/api/dist/admin.js");
