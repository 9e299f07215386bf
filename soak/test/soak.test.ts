import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { setPriority, tmpdir } from "node:os";
import path from "node:path";
import { expect, test } from "vitest";

const runner = path.resolve(import.meta.dirname, "../dist/run.js");

/**
 * CI's short soak: the hour's traffic, chaos and account at about three minutes, with a
 * crash every 15 to 25 s (so at least one of each kind), at a quarter of the hour's rate.
 * A change that loses a message, an event or an inbound message, stores a send twice or
 * breaks idempotency fails here; the timing figures are printed, never judged.
 */
test("three minutes of mixed traffic through kill -9 of an API, a worker and PostgreSQL lose nothing", async () => {
  const outputDir = await mkdtemp(path.join(tmpdir(), "parley-soak-"));
  try {
    const child = spawn(process.execPath, [runner], {
      env: {
        ...process.env,
        SOAK_MINUTES: process.env.SOAK_MINUTES ?? "3",
        // A quarter of the hour's rate: CI's other tests share the two cores; the account is the same.
        SOAK_RATE: process.env.SOAK_RATE ?? "15",
        SOAK_CRASH_MIN_S: process.env.SOAK_CRASH_MIN_S ?? "15",
        SOAK_CRASH_MAX_S: process.env.SOAK_CRASH_MAX_S ?? "25",
        // Behind the API suite at a low priority its queues drain mostly once that suite ends
        // (on CI's machine 4 to 5 minutes after its traffic): the drain's bound is not the test.
        SOAK_DRAIN_MAX_S: process.env.SOAK_DRAIN_MAX_S ?? "600",
        SOAK_OUTPUT_DIR: outputDir,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    // Behind the other tests on the cores (PostgreSQL, the APIs and workers it starts inherit
    // it): this run's figures are printed, never judged; only its account is.
    if (child.pid !== undefined) setPriority(child.pid, 15);
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    console.log(
      output
        .split("\n")
        .filter((line) => !line.startsWith("[soak"))
        .join("\n"),
    );
    expect(code, output.slice(-6_000)).toBe(0);

    const results = JSON.parse(await readFile(path.join(outputDir, "results.json"), "utf8"));
    expect(results.account.failures).toEqual([]);
    expect(results.account.ok).toBe(true);
    const kinds = new Set(results.crashes.map((crash: { kind: string }) => crash.kind));
    // With DATABASE_URL the soak does not own PostgreSQL and never kills it.
    const expected = process.env.DATABASE_URL ? ["api", "worker"] : ["api", "postgres", "worker"];
    expect([...kinds].sort()).toEqual(expected);
    // Every kind of traffic flowed and was accounted for. How much depends on what CI's other
    // tests leave this run (at 15 a second on an idle machine: about 1,000 sends, 2,500 events,
    // 300 inbound WhatsApp and 100 inbound emails; on a CI machine busy with the API suite, a
    // third of that): a count is the account's input, never its verdict.
    expect(results.account.sends.answered).toBeGreaterThan(0);
    expect(results.account.events.recorded).toBeGreaterThan(0);
    expect(results.account.inbound.meta.acknowledged).toBeGreaterThan(0);
    expect(results.account.inbound.smtp.acknowledged).toBeGreaterThan(0);
    // Behaviour over time (issue 41, item 5): a row per minute, the RSS of every long-lived
    // process and the backlogs sampled through the run, and each crash on every chart.
    expect(results.per_minute.length).toBeGreaterThanOrEqual(3);
    for (const minute of results.per_minute) {
      expect(Object.keys(minute)).toEqual(
        expect.arrayContaining(["requests_per_s", "send_p50_ms", "send_p99_ms", "failed_attempts", "crashes"]),
      );
    }
    const rssNames = new Set(results.rss_mb.flatMap((sample: { values: object }) => Object.keys(sample.values)));
    for (const name of ["api-1", "api-2", "worker-1", "worker-2"]) expect(rssNames.has(name), name).toBe(true);
    expect(Object.keys(results.backlog.at(-1).values)).toEqual(
      expect.arrayContaining(["messages", "events", "jobs", "jobs_locked", "jobs_waiting"]),
    );
    const report = await readFile(path.join(outputDir, "report.html"), "utf8");
    const charts = report.split("<svg").slice(1);
    expect(charts).toHaveLength(5);
    for (const chart of charts) {
      for (const crash of results.crashes) expect(chart).toContain(`killed at ${crash.at_s} s`);
    }
    // A process of ours that died without being killed is a crash of ours (its target is 0):
    // its own output, from its slot's log, says why.
    const exited = Object.entries(results.processes as Record<string, { pid: number; end?: string }[]>).flatMap(
      ([slot, lives]) => lives.filter((life) => life.end === "exited").map((life) => ({ slot, ...life })),
    );
    const outputs = await Promise.all(
      exited.map(async ({ slot, pid }) => `${slot} (pid ${pid}):\n${await ownLog(outputDir, slot, pid)}`),
    );
    // With the run's events (crashes, restarts, refusals), for what was happening around it.
    expect(exited, [...outputs, `The run's events:\n${results.notes.join("\n")}`].join("\n\n")).toEqual([]);
    // Each process slot's output in logs/, every process it ran marked: the killed ones restarted.
    for (const name of ["api-1", "api-2", "worker-1", "worker-2"]) {
      const log = await readFile(path.join(outputDir, "logs", `${name}.log`), "utf8");
      const processes = log.match(/^--- pid \d+ started at /gm)?.length ?? 0;
      expect(processes, name).toBeGreaterThanOrEqual(name.endsWith("-2") ? 2 : 1);
    }
  } finally {
    await rm(outputDir, { recursive: true, force: true });
  }
});

/** The output of one process of a slot, from the slot's log (each process's starts with its marker). */
async function ownLog(outputDir: string, slot: string, pid: number): Promise<string> {
  const log = await readFile(path.join(outputDir, "logs", `${slot}.log`), "utf8").catch(() => "");
  const start = log.indexOf(`--- pid ${pid} started`);
  if (start === -1) return "(not in the log)";
  const next = log.indexOf("--- pid ", start + 1);
  return log.slice(start, next === -1 ? undefined : next).slice(-8_000);
}
