import { mkdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { type Account, takeAccount } from "./account.js";
import { type Cluster, startCluster } from "./cluster.js";
import { resetStatementStats, startDiagnostics, writeTopStatements } from "./diagnostics.js";
import { pssMb, root, rssMb, sleep } from "./processes.js";
import { type Crash, Recorder } from "./recorder.js";
import { renderReport } from "./report.js";
import { type Figures, figuresOf } from "./results.js";
import { Traffic } from "./traffic.js";

function numberFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) {
    console.error(`${name} must be a positive number, got '${raw}'`);
    process.exit(2);
  }
  return value;
}

export const settings = {
  minutes: numberFromEnv("SOAK_MINUTES", 60),
  ratePerSecond: numberFromEnv("SOAK_RATE", 40),
  crashMinS: numberFromEnv("SOAK_CRASH_MIN_S", 30),
  crashMaxS: numberFromEnv("SOAK_CRASH_MAX_S", 90),
  /** How long the queues may take to drain after the traffic before the account is taken anyway. */
  drainMaxS: numberFromEnv("SOAK_DRAIN_MAX_S", 300),
  /** Which crashes to cause, comma-separated (api, worker, postgres): all by default, one to study it. */
  crashKinds: (process.env.SOAK_CRASH_KINDS || "api,worker,postgres").split(",").map((kind) => kind.trim()),
  outputDir: path.resolve(process.env.SOAK_OUTPUT_DIR || path.join(root, "soak")),
  databaseUrl: process.env.DATABASE_URL || undefined,
};

/** The crash kinds in a shuffled cycle: every kind once before any twice. */
function crashKinds(ownPostgres: boolean): () => Crash["kind"] {
  const kinds = (["api", "worker", "postgres"] as const).filter(
    (kind) => settings.crashKinds.includes(kind) && (kind !== "postgres" || ownPostgres),
  );
  if (kinds.length === 0) {
    console.error(
      `SOAK_CRASH_KINDS must name api, worker or postgres (postgres only on the soak's own), got '${settings.crashKinds.join(",")}'`,
    );
    process.exit(2);
  }
  let cycle: Crash["kind"][] = [];
  return () => {
    if (cycle.length === 0) cycle = [...kinds].sort(() => Math.random() - 0.5);
    return cycle.pop() as Crash["kind"];
  };
}

/**
 * `kill -9` every 30 to 90 s (SOAK_CRASH_MIN_S, SOAK_CRASH_MAX_S): of an API process, a
 * worker, or PostgreSQL's postmaster (restarted at once, as a supervisor would). The second
 * API and the second worker are the ones killed: the first of each lives through the run,
 * so that its memory over the hour shows a leak.
 */
async function chaos(cluster: Cluster, recorder: Recorder, until: () => boolean): Promise<void> {
  const nextKind = crashKinds(cluster.postgres.pid !== undefined);
  for (;;) {
    const waitMs = (settings.crashMinS + Math.random() * (settings.crashMaxS - settings.crashMinS)) * 1000;
    const deadline = performance.now() + waitMs;
    while (performance.now() < deadline) {
      if (until()) return;
      await sleep(250);
    }
    if (until()) return;
    const kind = nextKind();
    const at = recorder.now();
    if (kind === "postgres") {
      const { pid, restartedInMs } = await cluster.postgres.crash();
      recorder.crashes.push({ at, kind, target: "postgres", pid, restartedInMs });
      recorder.note(
        `kill -9 PostgreSQL's postmaster (pid ${pid}); restarted in ${(restartedInMs / 1000).toFixed(1)} s`,
      );
      continue;
    }
    const target = kind === "api" ? cluster.apis[1] : cluster.workers[1];
    const pid = target?.kill();
    if (!target || pid === undefined) continue;
    recorder.crashes.push({ at, kind, target: target.name, pid });
    recorder.note(`kill -9 ${target.name} (pid ${pid})`);
  }
}

interface Backlog {
  messages: number;
  events: number;
  /** Every job not yet done (those below included). */
  jobs: number;
  /** Of them, the ones a worker holds now. */
  jobs_locked: number;
  /** Of them, the ones waiting for their retry (graphile-worker's backoff). */
  jobs_waiting: number;
}

async function backlogOf(cluster: Cluster): Promise<Backlog> {
  const [row] = await cluster.sql<Backlog[]>`
    select (select count(*) from message_outbox)::int as messages,
           (select count(*) from event_outbox)::int as events,
           count(*)::int as jobs,
           (count(*) filter (where locked_at is not null))::int as jobs_locked,
           (count(*) filter (where locked_at is null and run_at > now()))::int as jobs_waiting
      from graphile_worker.jobs where attempts < max_attempts`;
  return row ?? { messages: 0, events: 0, jobs: 0, jobs_locked: 0, jobs_waiting: 0 };
}

/** Memory every 5 s, backlogs every 2 s, until stopped. */
function sample(cluster: Cluster, recorder: Recorder): () => void {
  const rssTimer = setInterval(() => {
    const pgIds = cluster.postgres.processIds();
    const values: Record<string, number | null> = {};
    for (const child of [...cluster.apis, ...cluster.workers]) values[child.name] = rssMb(child.pid) ?? null;
    values.postmaster = rssMb(cluster.postgres.pid) ?? null;
    values.soak = process.memoryUsage().rss / 1024 / 1024;
    // Every backend maps the shared buffers: their RSS added up would count them once each.
    if (pgIds.length > 0) values.postgres_pss = pgIds.reduce((sum, pid) => sum + (pssMb(pid) ?? 0), 0);
    recorder.rss.push({ at: recorder.now(), values });
  }, 5_000);
  let sampling = false;
  const backlogTimer = setInterval(() => {
    if (sampling) return;
    sampling = true;
    backlogOf(cluster)
      .then(
        (backlog) => recorder.backlog.push({ at: recorder.now(), values: { ...backlog } }),
        () =>
          recorder.backlog.push({
            at: recorder.now(),
            values: { messages: null, events: null, jobs: null, jobs_locked: null, jobs_waiting: null },
          }),
      )
      .finally(() => {
        sampling = false;
      });
  }, 2_000);
  return () => {
    clearInterval(rssTimer);
    clearInterval(backlogTimer);
  };
}

/** After the traffic: until the outboxes and the queue are empty and the receiver has gone quiet. */
async function drain(cluster: Cluster, recorder: Recorder): Promise<void> {
  const deadline = performance.now() + settings.drainMaxS * 1000;
  let quietSince = performance.now();
  let lastArrivals = -1;
  for (;;) {
    const backlog = await backlogOf(cluster).catch(() => undefined);
    const arrivals = [...cluster.receiver.arrivals.values()].reduce((sum, count) => sum + count, 0);
    if (arrivals !== lastArrivals) {
      lastArrivals = arrivals;
      quietSince = performance.now();
    }
    const empty = backlog && backlog.messages + backlog.events + backlog.jobs === 0;
    if (empty && performance.now() - quietSince > 3_000) return;
    if (performance.now() > deadline) {
      recorder.note(`the queues did not drain within ${settings.drainMaxS} s: ${JSON.stringify(backlog)}`);
      return;
    }
    await sleep(500);
  }
}

/**
 * An hour is long to lose to one stray exception of the harness (a simulator's socket): it
 * is noted, the run goes on, and the run fails at the end (exit 2) with the errors listed.
 */
const harnessErrors: string[] = [];

async function main(): Promise<void> {
  const recorder = new Recorder();
  process.on("uncaughtException", (error) => {
    harnessErrors.push(error.stack ?? String(error));
    recorder.note(`harness error: ${error.message}`);
  });
  console.log(
    `Soak: ${settings.minutes} min at ${settings.ratePerSecond} requests/s, a crash every ${settings.crashMinS}-${settings.crashMaxS} s`,
  );
  // Each process's output (LOG_LEVEL=warn): what happened at a crash, beyond the figures.
  const logDir = path.join(settings.outputDir, "logs");
  await rm(logDir, { recursive: true, force: true });
  await mkdir(logDir, { recursive: true });
  const cluster = await startCluster(settings.databaseUrl, recorder, logDir);
  let account: Account | undefined;
  try {
    const endpoints = await createEndpoints(cluster);
    const traffic = new Traffic(cluster, recorder);
    await traffic.prepare();
    const statementStats = await resetStatementStats(cluster.sql);
    recorder.startClock();
    recorder.note("prepared: traffic starts");
    const trafficStart = recorder.now();
    const stopSampling = sample(cluster, recorder);
    const stopDiagnostics = startDiagnostics(cluster.sql, recorder, path.join(logDir, "diagnostics.jsonl"), () => ({
      ...Object.fromEntries(
        [...cluster.apis, ...cluster.workers].map((child) => [child.name, child.pid === undefined ? [] : [child.pid]]),
      ),
      postgres: cluster.postgres.processIds(),
      soak: [process.pid],
    }));
    let trafficDone = false;
    const chaosDone = chaos(cluster, recorder, () => trafficDone);
    await traffic.run(settings.minutes * 60_000, settings.ratePerSecond);
    trafficDone = true;
    await chaosDone;
    const trafficEnd = recorder.now();
    recorder.note("traffic stopped: draining the queues");
    if (statementStats)
      await writeTopStatements(cluster.sql, path.join(logDir, "statements.json")).catch((error: unknown) =>
        recorder.note(`pg_stat_statements could not be read: ${String(error)}`),
      );
    await drain(cluster, recorder);
    stopSampling();
    stopDiagnostics();
    recorder.note("drained: taking the account");
    account = await takeAccount({
      sql: cluster.sql,
      organizationId: cluster.organizationId,
      endpointsCreatedAt: endpoints,
      sends: traffic.sends,
      inbound: traffic.inbound,
      meta: cluster.meta,
      sink: cluster.sink,
      receiver: cluster.receiver,
      crashes: recorder.crashes,
    });
    const longLived = [...cluster.apis, ...cluster.workers]
      .filter((child) => child.lives.length === 1)
      .map((child) => child.name);
    const exitedOnTheirOwn = [...cluster.apis, ...cluster.workers].flatMap((child) =>
      child.lives
        .filter((life) => life.end === "exited")
        .map((life) => `${child.name} (pid ${life.pid}): ${life.exit}`),
    );
    const figures = figuresOf(recorder, account, { start: trafficStart, end: trafficEnd, longLived, exitedOnTheirOwn });
    await writeResults(recorder, cluster, account, figures);
    printSummary(account, figures);
  } finally {
    await cluster.stop();
  }
  if (!account?.ok) process.exitCode = 1;
  if (harnessErrors.length > 0) {
    console.error(`The harness itself failed ${harnessErrors.length} times:\n${harnessErrors.join("\n")}`);
    process.exitCode = 2;
  }
}

/** One endpoint for every event in each environment, at the receiver: returns when they were made. */
async function createEndpoints(cluster: Cluster): Promise<Date> {
  const started = new Date();
  for (const [env, key] of [
    ["live", cluster.liveKey],
    ["test", cluster.testKey],
  ] as const) {
    const response = await fetch(`http://127.0.0.1:${cluster.apiPorts[0]}/v1/webhooks`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ url: `${cluster.receiver.url}/${env}`, events: ["*"] }),
    });
    const body = (await response.json()) as { secret?: string };
    if (response.status !== 201 || !body.secret) throw new Error(`POST /webhooks answered ${response.status}`);
    cluster.receiver.secrets.set(`/${env}`, body.secret);
  }
  return started;
}

async function writeResults(recorder: Recorder, cluster: Cluster, account: Account, figures: Figures): Promise<void> {
  await mkdir(settings.outputDir, { recursive: true });
  const cpus = os.cpus();
  const results = {
    date: new Date().toISOString(),
    machine: {
      cpu_model: cpus[0]?.model ?? "unknown",
      cpu_count: cpus.length,
      memory_gb: Math.round(os.totalmem() / 1024 ** 3),
      node: process.version,
      platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    },
    settings: {
      minutes: settings.minutes,
      rate_per_second: settings.ratePerSecond,
      crash_every_s: [settings.crashMinS, settings.crashMaxS],
      postgres: settings.databaseUrl ? "DATABASE_URL (not killed)" : "embedded, killed by the chaos",
    },
    targets: figures.targets,
    account,
    crashes: recorder.crashes.map((crash) => ({ ...crash, at_s: Math.round(crash.at / 100) / 10 })),
    processes: Object.fromEntries([...cluster.apis, ...cluster.workers].map((child) => [child.name, child.lives])),
    per_minute: figures.perMinute,
    failed_attempts: failedAttemptsByCause(recorder),
    rss_mb: recorder.rss,
    backlog: recorder.backlog,
    notes: recorder.notes,
    harness_errors: harnessErrors,
  };
  await writeFile(path.join(settings.outputDir, "results.json"), `${JSON.stringify(results, null, 1)}\n`);
  await writeFile(path.join(settings.outputDir, "report.html"), renderReport(results));
  console.log(`Wrote ${path.join(settings.outputDir, "results.json")} and report.html`);
}

/** The client's failed attempts (5xx, network), by cause and by crash: which crash caused what. */
function failedAttemptsByCause(recorder: Recorder): { cause: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const attempt of recorder.failedAttempts) {
    const cause = attempt.what.replace(/\/[a-z]+_[0-9A-Z]{26}/g, "/{id}");
    counts.set(cause, (counts.get(cause) ?? 0) + 1);
  }
  return [...counts]
    .map(([cause, count]) => ({ cause, count }))
    .sort((a, b) => b.count - a.count)
    .slice(0, 30);
}

function printSummary(account: Account, figures: Figures): void {
  console.log("");
  for (const target of figures.targets) {
    console.log(
      `${target.met ? "met    " : "MISSED "} ${target.figure.padEnd(58)} ${String(target.value).padEnd(12)} target ${target.target}`,
    );
  }
  console.log("");
  console.log(
    `sends: ${account.sends.answered} answered 201, ${account.sends.unanswered} unanswered; ` +
      `events: ${account.events.recorded} recorded, ${account.events.duplicate_deliveries} duplicate deliveries; ` +
      `inbound: ${account.inbound.meta.acknowledged} WhatsApp, ${account.inbound.smtp.acknowledged} email`,
  );
  if (account.ok) console.log("The account: nothing lost.");
  else for (const failure of account.failures) console.log(`LOSS: ${failure}`);
}

main().catch((error: unknown) => {
  console.error(`The soak could not run: ${error instanceof Error ? error.stack : String(error)}`);
  process.exitCode = 2;
});
