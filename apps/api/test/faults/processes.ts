import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { connect } from "node:net";
import path from "node:path";
import { findFreePort } from "@parley/db";
import { afterEach } from "vitest";
import { eventually } from "../harness.js";

const apiMain = path.resolve(import.meta.dirname, "../../dist/main.js");

export interface ApiProcess {
  child: ChildProcess;
  port: number;
  /** Everything it wrote, for failure messages. */
  output(): string;
  /** Resolves with the exit code (null when ended by a signal). */
  exited: Promise<number | null>;
}

/**
 * `node apps/api/dist/main.js` as production runs it (`RUN_WORKER=false`: the worker is a
 * process of its own), on the given database; killed after each test if still running.
 */
export function useApiProcesses() {
  const children = new Set<ChildProcess>();
  const started: ApiProcess[] = [];
  afterEach(() => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    children.clear();
    started.length = 0;
  });
  return {
    /** The end of what each process of this test wrote, for a failure message. */
    outputs(maxChars: number): string {
      return started
        .map((api) => `API process on port ${api.port} (end of its output):\n${api.output().slice(-maxChars)}`)
        .join("\n");
    },

    async start(databaseUrl: string, env: Record<string, string> = {}): Promise<ApiProcess> {
      if (!existsSync(apiMain)) throw new Error(`${apiMain} is missing: run pnpm turbo run build first`);
      const port = await findFreePort();
      let output = "";
      const child = spawn("node", [apiMain], {
        env: {
          ...process.env,
          DATABASE_URL: databaseUrl,
          PORT: String(port),
          HOST: "127.0.0.1",
          RUN_WORKER: "false",
          LOG_LEVEL: "warn",
          RATE_LIMIT_PER_MINUTE: "100000",
          ...env,
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      children.add(child);
      child.stdout?.on("data", (chunk) => {
        output += chunk;
      });
      child.stderr?.on("data", (chunk) => {
        output += chunk;
      });
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      await eventually(
        async () => {
          if (child.exitCode !== null) throw new Error(`the API exited with ${child.exitCode}:\n${output}`);
          return connects(port);
        },
        (listening) => listening,
        30_000,
      );
      const api = { child, port, output: () => output, exited };
      started.push(api);
      return api;
    },
  };
}

/** Whether a TCP connection to the port is accepted now (false when refused). */
export function connects(port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "ECONNREFUSED") resolve(false);
      else reject(error);
    });
  });
}
