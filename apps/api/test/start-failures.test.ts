import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { type EmbeddedDatabase, findFreePort, startEmbeddedDatabase } from "@parley/db";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { apiDist, type Finished, runningCommandLines, runToEnd, startUntil, workerDist } from "./start-processes.js";

/**
 * README, "If it does not start": every start that cannot work (`pnpm start`'s main.js, the
 * worker on its own, `pnpm admin`) ends with exit code 1, exactly one line on stderr naming
 * the variable or the cause and the fix, no stack frame anywhere, and nothing left running.
 */

function expectOneLineFailure(result: Finished, expected: RegExp) {
  expect(result.code, `${result.stdout}${result.stderr}`).toBe(1);
  const lines = result.stderr.split("\n").filter((line) => line.trim() !== "");
  expect(lines, result.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(expected);
  expect(`${result.stdout}${result.stderr}`).not.toMatch(/^\s+at /m);
}

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "parley-start-failures-"));
  await chmod(scratch, 0o755);
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

function freshDataDir(name: string): string {
  return path.join(scratch, name);
}

/** The test run's database URL with one part changed. */
function databaseUrlWith(change: (url: URL) => void): string {
  const url = new URL(inject("databaseUrl"));
  change(url);
  return url.toString();
}

async function refusedUrl(): Promise<string> {
  return `postgres://parley:secret-password@127.0.0.1:${await findFreePort()}/parley`;
}

describe("pnpm start: each start that cannot work is one line, exit 1, nothing left running", () => {
  const main = path.join(apiDist, "main.js");

  it("PORT already in use: names PORT, and stops the embedded PostgreSQL it had started", async () => {
    const blocker: Server = createServer();
    const port = await findFreePort();
    await new Promise<void>((resolve) => blocker.listen(port, "0.0.0.0", resolve));
    const dataDir = freshDataDir("port-in-use");
    try {
      const result = await runToEnd(main, [], { PORT: String(port), DATA_DIR: dataDir });
      expectOneLineFailure(result, new RegExp(`PORT ${port} is already in use.*set PORT to a free port`));
    } finally {
      blocker.close();
    }
    expect(existsSync(path.join(dataDir, "postgres", "PG_VERSION"))).toBe(true);
    expect(existsSync(path.join(dataDir, "postgres", "postmaster.pid"))).toBe(false);
    expect((await runningCommandLines()).filter((line) => line.includes(dataDir))).toEqual([]);
  });

  it("SIGTERM in the middle of the start: it finishes starting, then shuts down cleanly, exit 0, nothing left", async () => {
    // Its worker takes jobs before the API listens: embedded-postgres's own handler exited
    // at once (143) with them in hand.
    const dataDir = freshDataDir("sigterm-at-start");
    const port = String(await findFreePort());
    const started = await startUntil(main, { DATA_DIR: dataDir, PORT: port, LOG_LEVEL: "info" }, /"database ready"/);
    started.child.kill("SIGTERM");
    expect(await started.exited, started.output()).toBe(0);
    expect(started.output()).toMatch(/"shutting down"/);
    // Stopped before it was told it had started: no demo organization, no keys printed.
    expect(started.output()).not.toMatch(/test key:/);
    expect((await runningCommandLines()).filter((line) => line.includes(dataDir))).toEqual([]);
  });

  it("DATABASE_URL refusing connections: names DATABASE_URL, never its password", async () => {
    const result = await runToEnd(main, [], { DATABASE_URL: await refusedUrl() });
    expectOneLineFailure(result, /DATABASE_URL .*connection refused\. Start that server, or correct DATABASE_URL/);
    expect(result.stderr).not.toContain("secret-password");
  });

  it("DATABASE_URL with a wrong password", async () => {
    const url = databaseUrlWith((parsed) => {
      parsed.password = "not-the-password";
    });
    const result = await runToEnd(main, [], { DATABASE_URL: url });
    expectOneLineFailure(result, /PostgreSQL refused the password .*Correct the user name or password in DATABASE_URL/);
    expect(result.stderr).not.toContain("not-the-password");
  });

  it("DATABASE_URL naming a database that does not exist", async () => {
    const url = databaseUrlWith((parsed) => {
      parsed.pathname = "/no_such_database_here";
    });
    const result = await runToEnd(main, [], { DATABASE_URL: url });
    expectOneLineFailure(result, /database "no_such_database_here" does not exist.*createdb no_such_database_here/);
  });

  it("DATABASE_URL that is not a URL at all", async () => {
    const result = await runToEnd(main, [], { DATABASE_URL: "localhost:5432/parley" });
    expectOneLineFailure(result, /DATABASE_URL \(value hidden\): must be a PostgreSQL URL/);
  });

  describe("DATABASE_URL on a server older than PostgreSQL 14", () => {
    const binDir = path.resolve(import.meta.dirname, "../node_modules/postgres-13-binaries/native/bin");
    const available = existsSync(path.join(binDir, "postgres"));
    let old: EmbeddedDatabase | undefined;
    beforeAll(async () => {
      if (available) old = await startEmbeddedDatabase(path.join(scratch, "postgres-13"), { binDir });
    }, 120_000);
    afterAll(async () => {
      await old?.stop();
    });

    it.skipIf(!available)("is refused, naming its version and the one needed", async () => {
      const result = await runToEnd(main, [], { DATABASE_URL: old?.url ?? "" });
      expectOneLineFailure(result, /DATABASE_URL is version 13\.\d+; Parley needs PostgreSQL 14 or newer/);
    });
  });

  it("invalid values: every problem named at once, in one line", async () => {
    const result = await runToEnd(main, [], { PORT: "abc", RATE_LIMIT_PER_MINUTE: "-5", WORKER_CONCURRENCY: "0" });
    expectOneLineFailure(result, /^Parley cannot start: Invalid configuration: /);
    expect(result.stderr).toContain('PORT="abc"');
    expect(result.stderr).toContain('RATE_LIMIT_PER_MINUTE="-5"');
    expect(result.stderr).toContain('WORKER_CONCURRENCY="0"');
  });

  it("NODE_ENV=production without PARLEY_SECRETS_KEY: refused before any database is contacted", async () => {
    const result = await runToEnd(main, [], { NODE_ENV: "production", DATABASE_URL: await refusedUrl() });
    expectOneLineFailure(result, /PARLEY_SECRETS_KEY is required when NODE_ENV=production/);
    expect(result.stderr).not.toMatch(/connect/i);
  });

  it("a DATA_DIR that cannot be created: at once, not after a silent hang", async () => {
    const started = Date.now();
    const result = await runToEnd(main, [], { DATA_DIR: "/proc/parley-data" }, 30_000);
    expectOneLineFailure(result, /DATA_DIR \/proc\/parley-data cannot be created or written.*set DATA_DIR/);
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  describe("an embedded PostgreSQL that cannot run", () => {
    let binDir: string;
    beforeAll(async () => {
      binDir = path.join(scratch, "broken-bin");
      await rm(binDir, { recursive: true, force: true });
      await mkdir(binDir, { recursive: true });
    });

    it("a binary that is not executable", async () => {
      for (const name of ["postgres", "initdb"])
        await writeFile(path.join(binDir, name), "not a program", { mode: 0o644 });
      const dataDir = freshDataDir("not-executable");
      const result = await runToEnd(main, [], { EMBEDDED_POSTGRES_BIN_DIR: binDir, DATA_DIR: dataDir });
      expectOneLineFailure(result, /embedded PostgreSQL cannot run .*postgres: EACCES\. .*set DATABASE_URL/);
    });

    it("a shared library missing", async () => {
      const script =
        '#!/bin/sh\necho "$0: error while loading shared libraries: libicuuc.so.60: cannot open shared object file: No such file or directory" >&2\nexit 127\n';
      for (const name of ["postgres", "initdb"]) {
        await rm(path.join(binDir, name), { force: true });
        await writeFile(path.join(binDir, name), script, { mode: 0o755 });
      }
      const dataDir = freshDataDir("library-missing");
      const result = await runToEnd(main, [], { EMBEDDED_POSTGRES_BIN_DIR: binDir, DATA_DIR: dataDir });
      expectOneLineFailure(result, /error while loading shared libraries: libicuuc\.so\.60/);
    });
  });
});

describe("the worker on its own and pnpm admin fail the same way", () => {
  const worker = path.join(workerDist, "main.js");
  const admin = path.join(apiDist, "admin.js");

  it("the worker without DATABASE_URL", async () => {
    const result = await runToEnd(worker, [], {});
    expectOneLineFailure(result, /DATABASE_URL is required to run the worker on its own/);
  });

  it("the worker with DATABASE_URL refusing connections", async () => {
    const result = await runToEnd(worker, [], { DATABASE_URL: await refusedUrl() });
    expectOneLineFailure(result, /Cannot connect to the PostgreSQL of DATABASE_URL/);
  });

  it("the worker with invalid values: all of them named", async () => {
    const result = await runToEnd(worker, [], {
      DATABASE_URL: inject("databaseUrl"),
      WORKER_CONCURRENCY: "many",
      SMTP_INBOUND_PORT: "99999",
    });
    expectOneLineFailure(
      result,
      /Invalid worker configuration: .*WORKER_CONCURRENCY="many".*SMTP_INBOUND_PORT="99999"/,
    );
  });

  it("the worker whose SMTP_INBOUND_PORT is in use: named, and its runner stopped", async () => {
    const blocker: Server = createServer();
    const port = await findFreePort();
    await new Promise<void>((resolve) => blocker.listen(port, "0.0.0.0", resolve));
    try {
      const result = await runToEnd(worker, [], {
        DATABASE_URL: inject("databaseUrl"),
        SMTP_INBOUND_PORT: String(port),
      });
      expectOneLineFailure(result, new RegExp(`SMTP_INBOUND_PORT ${port} is already in use`));
    } finally {
      blocker.close();
    }
  });

  it("the worker whose ATTACHMENTS_S3_BUCKET cannot be reached: named in one line", async () => {
    const result = await runToEnd(worker, [], {
      DATABASE_URL: inject("databaseUrl"),
      ATTACHMENTS_S3_BUCKET: "parley-files",
      ATTACHMENTS_S3_ENDPOINT: `http://127.0.0.1:${await findFreePort()}`,
      AWS_ACCESS_KEY_ID: "test",
      AWS_SECRET_ACCESS_KEY: "test-secret",
    });
    expectOneLineFailure(
      result,
      /The bucket of ATTACHMENTS_S3_BUCKET \(parley-files\) cannot be reached at http:.*ECONNREFUSED/,
    );
  });

  it("admin keeps its documented JSON error on stdout, and one line on stderr", async () => {
    const result = await runToEnd(admin, ["create-org", "--name", "Acme", "--json"], { PORT: "abc" });
    expectOneLineFailure(result, /Invalid configuration: PORT="abc"/);
    const body = JSON.parse(result.stdout.trim()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("startup_failed");
    expect(body.error.message).toContain('PORT="abc"');
  });

  it("admin against an unreachable DATABASE_URL", async () => {
    const result = await runToEnd(admin, ["list-keys", "--org", "org_x", "--json"], {
      DATABASE_URL: await refusedUrl(),
    });
    expectOneLineFailure(result, /Cannot connect to the PostgreSQL of DATABASE_URL/);
    expect(JSON.parse(result.stdout.trim()).error.code).toBe("startup_failed");
  });
});
