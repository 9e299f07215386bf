import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, readFileSync } from "node:fs";
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
    private readonly ready: () => Promise<void> = async () => {},
    /** Where every process of the slot writes its output (`<name>.log`), for what a run's figures do not say. */
    private readonly logDir: string | undefined = undefined,
  ) {}

  get pid(): number | undefined {
    return this.child?.exitCode === null && this.child.signalCode === null ? this.child.pid : undefined;
  }

  async start(): Promise<void> {
    this.spawnProcess();
    await this.ready();
  }

  private spawnProcess(): void {
    // --trace-exit: a process that calls process.exit() says from where (a worker of a CI
    // soak exited with code 1 and not a byte of output, twice; nothing of Parley's exits so).
    const child = spawn(process.execPath, ["--max-semi-space-size=32", "--trace-exit", this.script], {
      env: this.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child = child;
    const life: ProcessLife = { pid: child.pid ?? 0, startedAt: this.clock() };
    this.lives.push(life);
    const logFile = this.logDir ? path.join(this.logDir, `${this.name}.log`) : undefined;
    const log = (text: string) => {
      if (logFile) appendFileSync(logFile, text);
    };
    log(`--- pid ${child.pid} started at ${(this.clock() / 1000).toFixed(1)} s\n`);
    let refusedToStart = false;
    // This process's own output, for its events (a slot's whole output, its predecessors'
    // included, once told the wrong story of a process that exited on its own).
    let ownOutput = "";
    const keep = (chunk: Buffer) => {
      const text = chunk.toString();
      // Its one line for a start that cannot work; an unexpected error there stays a crash.
      if (/Parley cannot start: (?!unexpected error)/.test(text)) refusedToStart = true;
      ownOutput = (ownOutput + text).slice(-8_000);
      log(text);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    child.once("exit", (code, signal) => {
      life.endedAt = this.clock();
      life.exit = signal ?? String(code);
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
