// `pnpm bench`: the performance figures of Parley beside a baseline, on this machine.
//
// Starts Parley in production shape on a fresh embedded database (the API with
// RUN_WORKER=false and one standalone worker, sandbox delays at zero) and, on the same
// PostgreSQL, the baseline server of bench/baseline/server.mjs (express 5 + zod +
// postgres.js, one transaction of three INSERTs per send). Loads both with the same
// autocannon settings, measures the rest of the figures against Parley alone, prints a
// table, and writes bench/results.json and bench/report.html from one results object.
//
// Figures, never pass/fail: a missed target is reported, never an exit code. The exit
// code is non-zero only when the harness itself fails. Not part of `pnpm test` or CI.
// Environment: see bench/README.md (BENCH_DURATION, BENCH_SAMPLES, BENCH_DEEP_ROWS,
// BENCH_WEBHOOK_EVENTS, BENCH_UPLOADS, BENCH_WARMUP, BENCH_ONLY or --only=...).
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import os from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import autocannon from "autocannon";
import postgres from "postgres";
import sharp from "sharp";
import { FIGURES, figureResult, phaseOrder, round, selectedPhases } from "./figures.mjs";
import {
  client,
  freePort,
  logOutputOf,
  nodeOptionsFrom,
  percentile,
  printTable,
  root,
  startApiProcess,
  startParley,
} from "./lib.mjs";
import { renderReport } from "./report.mjs";

// ---------------------------------------------------------------------------------------
// Settings

function numberFromEnv(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, not '${raw}'`);
  return value;
}

const settings = {
  connections: 50,
  durationSeconds: numberFromEnv("BENCH_DURATION", 10),
  warmupSeconds: numberFromEnv("BENCH_WARMUP", 2),
  samples: numberFromEnv("BENCH_SAMPLES", 200),
  deepRows: numberFromEnv("BENCH_DEEP_ROWS", 1_000_000),
  webhookEvents: numberFromEnv("BENCH_WEBHOOK_EVENTS", 20_000),
  webhookRate: 100,
  uploads: numberFromEnv("BENCH_UPLOADS", 20),
  sustainedSeconds: numberFromEnv("BENCH_SUSTAINED", 30),
  textLength: 200,
  // Each latency phase is measured this many times, interleaved with the others: its
  // figure is the worst repetition.
  repetitions: Math.max(1, Math.floor(numberFromEnv("BENCH_REPETITIONS", 3))),
  spreadConversations: Math.max(10, Math.floor(numberFromEnv("BENCH_SPREAD_CONVERSATIONS", 2000))),
  spreadMessages: Math.max(2, Math.floor(numberFromEnv("BENCH_SPREAD_MESSAGES", 25))),
  spreadRounds: Math.max(1, Math.floor(numberFromEnv("BENCH_SPREAD_ROUNDS", 2))),
  leverRounds: Math.max(1, Math.floor(numberFromEnv("BENCH_LEVER_ROUNDS", 6))),
  leverSeconds: Math.max(1, numberFromEnv("BENCH_LEVER_SECONDS", 5)),
};

/** The phases asked for by `--only=` or BENCH_ONLY (see selectedPhases). */
function phasesAsked() {
  const flag = process.argv.find((arg) => arg.startsWith("--only="));
  return selectedPhases(flag ? flag.slice("--only=".length) : (process.env.BENCH_ONLY ?? ""));
}

const OUTPUT_JSON = path.join(root, "bench/results.json");
const OUTPUT_HTML = path.join(root, "bench/report.html");

/**
 * The hot paths' mechanisms added for these figures, each with the setting that switches it
 * off and the loads it is measured on (`BENCH_ONLY=levers`): single = one conversation,
 * spread = 2,000 at random.
 */
const LEVERS = [
  { name: "group_commit", env: { GROUP_COMMIT: "false" }, loads: ["send_single", "send_spread"] },
  { name: "relay_in_request", env: { RELAY_IN_REQUEST: "false" }, loads: ["webhook_latency"] },
  { name: "message_texts", env: { MESSAGE_TEXTS: "false" }, loads: ["page_single", "page_spread"] },
  // A/A: B is A again. What two processes of one build differ by on this machine: a lever's
  // gain is a gain only beyond this.
  { name: "none", env: {}, loads: ["page_single", "page_spread", "send_single", "send_spread"] },
];
// BENCH_B_BUILD: another checkout, built (`pnpm install && pnpm build`): B runs its API, A
// this checkout's, on the page and send loads. A code change measured A/B as a lever is.
if (process.env.BENCH_B_BUILD) {
  LEVERS.push({
    name: "build",
    env: {},
    buildRoot: path.resolve(process.env.BENCH_B_BUILD),
    loads: (process.env.BENCH_B_LOADS ?? "page_single,page_spread,send_single,send_spread").split(","),
  });
}

// ---------------------------------------------------------------------------------------
// Small helpers

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const sortedCopy = (values) => [...values].sort((a, b) => a - b);
/** "4.7 + 2.1 ms": a latency split into the API's answer and what came after it. */
const tailText = (split) => (split ? `${split.answer_ms} + ${split.after_ms} ms` : "none");
const median = (values) => (values.length ? percentile(sortedCopy(values), 50) : null);

/**
 * Samples PostgreSQL every 50 ms from `origin` until `stop()`: what autovacuum worked on
 * (each table with when it was first seen at it: a stall of every process at once is the
 * database's), and the busy sessions by what they wait on with how many backends just started.
 */
function samplePostgres(sql, origin) {
  const autovacuum = new Map();
  const activity = [];
  let sampling = true;
  const seconds = () => (performance.now() - origin) / 1000;
  const running = (async () => {
    while (sampling) {
      const rows = await sql`
        select query from pg_stat_activity where backend_type = 'autovacuum worker' and query <> ''`.catch(() => []);
      for (const row of rows) if (!autovacuum.has(row.query)) autovacuum.set(row.query, round(seconds(), 1));
      const [sessions] = await sql`
        select count(*) filter (where state = 'active' and pid <> pg_backend_pid())::int as active,
               count(*) filter (where backend_start > now() - interval '200 milliseconds')::int as started,
               coalesce(string_agg(distinct coalesce(wait_event_type || ':' || wait_event, 'cpu'), ' ')
                 filter (where state = 'active' and pid <> pg_backend_pid()), '') as waits
        from pg_stat_activity where backend_type = 'client backend'`.catch(() => [undefined]);
      if (sessions) activity.push({ at: seconds(), ...sessions });
      await sleep(50);
    }
  })();
  return {
    async stop() {
      sampling = false;
      await running;
      return { autovacuum, activity };
    },
  };
}

/** PostgreSQL's samples around `events` (each with `at`, in s): from 0.3 s before the first to 0.3 s after the last. */
function postgresAround(activity, events) {
  const from = Math.min(...events.map((event) => event.at)) - 0.3;
  const to = Math.max(...events.map((event) => event.at)) + 0.3;
  const seen = activity.filter((sample) => sample.at >= from && sample.at <= to);
  return {
    samples: seen.length,
    active_max: Math.max(0, ...seen.map((sample) => sample.active)),
    backends_started: seen.reduce((sum, sample) => sum + sample.started, 0),
    waits: [...new Set(seen.flatMap((sample) => sample.waits.split(" ").filter(Boolean)))].join(" "),
  };
}

const ULID_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/**
 * SQL of a message id (`msg_` + a ULID) from the columns `ms` (the row's created_at in
 * milliseconds) and `i` (a row number): 10 characters of the timestamp (48 bits, 5 each),
 * then 16 "random" ones, `prefix` (4 characters, which keeps two bulk inserts' ids apart)
 * and the row number over 12 characters (60 bits). (created_at, id) ascend together.
 */
function messageIdSql(prefix) {
  const timePart = Array.from(
    { length: 10 },
    (_, k) => `substr('${ULID_ALPHABET}', (((ms >> ${5 * (9 - k)}) & 31)::int) + 1, 1)`,
  ).join(" || ");
  const rowPart = Array.from(
    { length: 12 },
    (_, k) => `substr('${ULID_ALPHABET}', (((i::bigint >> ${5 * (11 - k)}) & 31)::int) + 1, 1)`,
  ).join(" || ");
  return `'msg_' || ${timePart} || '${prefix}' || ${rowPart}`;
}

function log(line) {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

/** VmRSS of a process in MB (Linux /proc); null elsewhere or once the process is gone. */
function rssMb(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const match = /VmRSS:\s+(\d+)\s+kB/.exec(status);
    return match ? Number(match[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** Samples the RSS of named processes every 200 ms until stopped. */
function sampleRss(pids) {
  const started = performance.now();
  const series = Object.fromEntries(Object.keys(pids).map((name) => [name, []]));
  const take = () => {
    const t = (performance.now() - started) / 1000;
    for (const [name, pid] of Object.entries(pids)) {
      const mb = pid ? rssMb(pid) : null;
      if (mb !== null) series[name].push([round(t, 2), round(mb, 1)]);
    }
  };
  take();
  const timer = setInterval(take, 200);
  return {
    stop() {
      clearInterval(timer);
      take();
      const max = Object.fromEntries(
        Object.entries(series).map(([name, points]) => [
          name,
          points.length ? Math.max(...points.map(([, mb]) => mb)) : null,
        ]),
      );
      return { series, max };
    },
  };
}

// CPU during a load, from Linux's /proc (null elsewhere): where the machine's time went,
// so a figure says whether the server, PostgreSQL or the load generator was the ceiling.
const CLOCK_TICK_MS = 10; // USER_HZ is 100 on Linux

function processCpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS;
  } catch {
    return null;
  }
}

/** Every process named `postgres` (the embedded server's postmaster, backends and helpers). */
function postgresCpuMs() {
  let total = 0;
  try {
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (readFileSync(`/proc/${entry}/comm`, "utf8").trim() !== "postgres") continue;
      } catch {
        continue;
      }
      total += processCpuMs(entry) ?? 0;
    }
  } catch {
    return null;
  }
  return total;
}

/** [busy, all] ticks of the whole machine since boot. */
function machineTicks() {
  try {
    const ticks = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
    const all = ticks.reduce((sum, value) => sum + value, 0);
    return [all - ticks[3] - ticks[4], all]; // idle and iowait are not busy
  } catch {
    return null;
  }
}

function cpuSnapshot(serverPid) {
  // autocannon runs in this process.
  const loadGenerator = process.cpuUsage();
  return {
    server: serverPid ? processCpuMs(serverPid) : null,
    postgres: postgresCpuMs(),
    loadGenerator: (loadGenerator.user + loadGenerator.system) / 1000,
    machine: machineTicks(),
  };
}

/** CPU per request of each party, and how busy the machine was, between two snapshots. */
function cpuBetween(before, after, requests) {
  const perRequest = (name) =>
    before[name] === null || after[name] === null || requests === 0
      ? null
      : round((after[name] - before[name]) / requests, 3);
  const busy =
    before.machine && after.machine
      ? round((100 * (after.machine[0] - before.machine[0])) / (after.machine[1] - before.machine[1]), 0)
      : null;
  return {
    machineBusyPercent: busy,
    msPerRequest: {
      server: perRequest("server"),
      postgres: perRequest("postgres"),
      loadGenerator: perRequest("loadGenerator"),
    },
  };
}

function describeCpu(cpu) {
  if (!cpu || cpu.machineBusyPercent === null) return "CPU not measured (not Linux?)";
  const { server, postgres, loadGenerator } = cpu.msPerRequest;
  return (
    `machine ${cpu.machineBusyPercent} % busy; CPU per request: server ${server} ms, ` +
    `PostgreSQL ${postgres} ms, load generator ${loadGenerator} ms`
  );
}

/** The percentile curve of a latency sample, for the report's distribution charts. */
const CURVE_PERCENTILES = [0, 10, 25, 50, 75, 90, 95, 97.5, 99, 99.5, 99.9, 99.99, 100];
function percentileCurve(sorted) {
  if (sorted.length === 0) return [];
  return CURVE_PERCENTILES.map((p) => [p, round(p === 0 ? sorted[0] : percentile(sorted, p), 2)]);
}

function summary(values) {
  const sorted = sortedCopy(values);
  return {
    count: sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1],
    curve: percentileCurve(sorted),
  };
}

/** Counts of timestamps (ms since `origin`) per bin, as [seconds, per second] points. */
function ratePerSecond(timestamps, origin, binMs, untilMs) {
  const bins = [];
  for (const t of timestamps) {
    const bin = Math.floor((t - origin) / binMs);
    if (bin < 0 || (untilMs !== undefined && (bin + 1) * binMs > untilMs)) continue;
    bins[bin] = (bins[bin] ?? 0) + 1;
  }
  return Array.from(bins, (count, i) => [round(((i + 1) * binMs) / 1000, 2), round(((count ?? 0) * 1000) / binMs, 0)]);
}

// ---------------------------------------------------------------------------------------
// Processes: the baseline server and the webhook receiver

async function startBaseline(databaseUrl) {
  const port = await freePort();
  // Plain Node, without the API's settings: only a CPU profile when asked for (BENCH_CPU_PROF_DIR),
  // and BENCH_BASELINE_NODE_ARGS.
  const profile = process.env.BENCH_CPU_PROF_DIR
    ? ["--cpu-prof", "--cpu-prof-dir", process.env.BENCH_CPU_PROF_DIR, "--cpu-prof-name", "baseline.cpuprofile"]
    : [];
  const extra = nodeOptionsFrom("BENCH_BASELINE_NODE_ARGS");
  const child = spawn(process.execPath, [...profile, ...extra, path.join(root, "bench/baseline/server.mjs")], {
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk) => (output = (output + chunk).slice(-20_000)));
  child.stderr.on("data", (chunk) => (output = (output + chunk).slice(-20_000)));
  logOutputOf(child, "baseline");
  const deadline = Date.now() + 30_000;
  while (!output.includes("baseline listening on")) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGTERM");
      throw new Error(`the baseline server did not start:\n${output}`);
    }
    await sleep(50);
  }
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/**
 * A fast local webhook receiver: answers 200 at once, then hands each envelope with its
 * arrival time (performance.now() of this process, the clock requests are timed with)
 * to the current listener.
 */
async function startReceiver() {
  let listener = () => {};
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      const arrived = performance.now();
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
      try {
        listener(JSON.parse(Buffer.concat(chunks).toString("utf8")), arrived);
      } catch {
        // Not an envelope: ignored.
      }
    });
  });
  server.keepAliveTimeout = 60_000;
  const port = await freePort();
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    listen(fn) {
      listener = fn;
    },
    stop() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

// ---------------------------------------------------------------------------------------
// Load: autocannon with the same settings against Parley and the baseline

/**
 * One autocannon run (50 connections, a warm-up first), keeping every response's latency
 * and arrival time, the RSS of the given processes during the measured part, and the CPU
 * the server (`serverPid`), PostgreSQL and the load generator spent on it.
 */
async function load(options, rssPids = {}, serverPid = undefined) {
  const latencies = [];
  const arrivals = [];
  let started = 0;
  let sampler;
  const instance = autocannon({
    connections: settings.connections,
    duration: settings.durationSeconds,
    ...(settings.warmupSeconds > 0
      ? { warmup: { connections: settings.connections, duration: settings.warmupSeconds } }
      : {}),
    ...options,
  });
  let cpuBefore;
  instance.on("start", () => {
    started = performance.now();
    sampler = sampleRss(rssPids);
    cpuBefore = cpuSnapshot(serverPid);
  });
  instance.on("response", (_client, status, _bytes, responseTime) => {
    arrivals.push(performance.now());
    if (status >= 200 && status < 300) latencies.push(responseTime);
  });
  const result = await instance;
  const cpuAfter = cpuSnapshot(serverPid);
  const rss = sampler?.stop() ?? { series: {}, max: {} };
  const durationMs = (options.duration ?? settings.durationSeconds) * 1000;
  const sorted = sortedCopy(latencies);
  return {
    rps: result.requests.average,
    total: result.requests.total,
    cpu: cpuBefore ? cpuBetween(cpuBefore, cpuAfter, result.requests.total) : null,
    ok: result["2xx"],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    // autocannon's own percentiles (HdrHistogram of 2xx latencies, ms).
    latency: {
      p50: result.latency.p50,
      p90: result.latency.p90,
      p97_5: result.latency.p97_5,
      p99: result.latency.p99,
      p99_9: result.latency.p99_9,
      mean: result.latency.mean,
      max: result.latency.max,
    },
    curve: percentileCurve(sorted),
    perSecond: ratePerSecond(arrivals, started, 1000, durationMs),
    rss,
  };
}

const sendBody = (conversationId) =>
  JSON.stringify({
    conversation_id: conversationId,
    type: "text",
    text: `Benchmark message: ${"lorem ipsum dolor sit amet ".repeat(10)}`.slice(0, settings.textLength),
  });

/** POST /messages with a distinct Idempotency-Key per request. */
function sendOptions(url, key, conversationId, extra = {}) {
  let counter = 0;
  const run = `${process.pid}-${Date.now().toString(36)}`;
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  return {
    url: `${url}/messages`,
    method: "POST",
    headers,
    body: sendBody(conversationId),
    requests: [
      {
        setupRequest: (request) => ({
          ...request,
          headers: { ...request.headers, "idempotency-key": `bench-${run}-${counter++}` },
        }),
      },
    ],
    ...extra,
  };
}

// ---------------------------------------------------------------------------------------
// The run

class Bench {
  constructor() {
    this.measured = {};
    this.series = {};
    this.errors = [];
  }

  async start() {
    log("building and starting Parley (API with RUN_WORKER=false + standalone worker)");
    this.parley = await startParley(
      {},
      {
        separateWorker: true,
        workerEnv: { SANDBOX_DELIVERY_DELAY_MS: "0", SANDBOX_READ_DELAY_MS: "0" },
      },
    );
    this.sql = postgres(this.parley.databaseUrl, { max: 2, onnotice: () => {} });
    this.api = client(this.parley.baseUrl, this.parley.testKey);
    log("starting the baseline server and the webhook receiver");
    this.baseline = await startBaseline(this.parley.databaseUrl);
    this.receiver = await startReceiver();
    this.machine = await this.machineInfo();

    // A sandbox WhatsApp conversation with an inbound message, so the customer-service
    // window is open and sends are accepted.
    const channels = await this.api("GET", "/channels?type=whatsapp");
    this.whatsapp = channels.data[0];
    if (!this.whatsapp) throw new Error("the demo organization has no sandbox WhatsApp channel");
    this.conversation = await this.newConversation("Bench sends", this.whatsapp.id);
    // The worker is up once a send is delivered end to end.
    const probe = await this.api("POST", "/messages", {
      conversation_id: this.conversation.id,
      type: "text",
      text: "hi",
    });
    await this.waitDelivered(probe.id, 60_000);
  }

  async stop() {
    await this.receiver?.stop().catch(() => {});
    await this.baseline?.stop().catch(() => {});
    await this.sql?.end({ timeout: 2 }).catch(() => {});
    await this.parley?.stop();
  }

  async machineInfo() {
    const [{ server_version: postgresVersion }] = await this.sql`show server_version`;
    const cpus = os.cpus();
    return {
      cpu_model: cpus[0]?.model ?? "unknown",
      cpu_count: cpus.length,
      memory_gb: round(os.totalmem() / 1024 ** 3, 1),
      node: process.version,
      postgres: postgresVersion,
      platform: `${os.platform()} ${os.release()} ${os.arch()}`,
      date: new Date().toISOString(),
      load_average_at_start: os.loadavg().map((value) => round(value, 2)),
      settings: {
        connections: settings.connections,
        duration_s: settings.durationSeconds,
        warmup_s: settings.warmupSeconds,
        samples: settings.samples,
        deep_rows: settings.deepRows,
        webhook_events: settings.webhookEvents,
        uploads: settings.uploads,
        only: [...phasesAsked()],
      },
    };
  }

  async newConversation(name, channelId) {
    const contact = await this.api("POST", "/contacts", { name });
    const conversation = await this.api("POST", "/conversations", {
      contact_id: contact.id,
      ...(channelId ? { channel_id: channelId } : {}),
    });
    if (channelId) {
      await this.api("POST", "/test-helpers/inbound-messages", {
        conversation_id: conversation.id,
        type: "text",
        text: "Hello",
      });
    }
    return conversation;
  }

  async waitDelivered(messageId, timeoutMs) {
    const started = performance.now();
    for (;;) {
      const message = await this.api("GET", `/messages/${messageId}`);
      if (message.status === "delivered") return performance.now() - started;
      if (message.status === "failed") throw new Error(`message ${messageId} failed: ${JSON.stringify(message.error)}`);
      if (performance.now() - started > timeoutMs) throw new Error(`message ${messageId} not delivered in time`);
    }
  }

  /** Work still queued for the worker: outbox rows and runnable jobs. */
  async backlog() {
    const [row] = await this.sql`
      select (select count(*) from message_outbox)::int as messages,
             (select count(*) from event_outbox)::int as events,
             (select count(*) from graphile_worker.jobs
               where run_at <= now() and attempts < max_attempts)::int as jobs`;
    return row;
  }

  /** Waits until the worker has caught up with the previous phase, so phases do not overlap. */
  async settle(label, timeoutMs = 300_000, onDrained = () => {}) {
    const started = performance.now();
    let left = await this.backlog();
    const initial = left;
    while (left.messages + left.events + left.jobs > 0) {
      if (performance.now() - started > timeoutMs) {
        log(`${label}: the worker had not caught up after ${timeoutMs / 1000} s (${JSON.stringify(left)})`);
        return { initial, seconds: null };
      }
      await sleep(250);
      left = await this.backlog();
    }
    // The churn of a phase starts autovacuum: let it finish too (at most a minute), so it
    // does not share the cores with the next phase's measurement.
    const seconds = (performance.now() - started) / 1000;
    onDrained();
    const quietBy = performance.now() + 60_000;
    while (performance.now() < quietBy && (await this.autovacuumsRunning()) > 0) await sleep(250);
    return { initial, seconds };
  }

  async autovacuumsRunning() {
    const [row] = await this.sql`
      select count(*)::int as n from pg_stat_activity where backend_type = 'autovacuum worker'`;
    return row.n;
  }

  async createWebhook(events) {
    return this.api("POST", "/webhooks", { url: this.receiver.url, events, description: "bench receiver" });
  }

  async deleteWebhook(endpoint) {
    await this.api("DELETE", `/webhooks/${endpoint.id}`);
  }

  /** A figure's measurement; a figure measured again (a repetition, a round) keeps every one. */
  record(key, value, extra = {}) {
    const measurement = { value, baseline: null, ratio: null, notes: "", ...extra };
    const before = this.measured[key]?.repetitions ?? [];
    this.measured[key] = { ...measurement, repetitions: [...before, measurement] };
  }

  // --- POST /messages, Parley vs baseline, and the API's RSS under that load ------------

  async phaseSend() {
    const key = this.parley.testKey;
    log(`POST /messages on the baseline: ${settings.connections} connections, ${settings.durationSeconds} s`);
    const base = await load(
      sendOptions(this.baseline.url, key, this.conversation.id),
      { baseline: this.baseline.pid },
      this.baseline.pid,
    );
    // Like the baseline, which stores and delivers nothing: the worker is stopped while
    // the API is loaded (on two cores it would take half the CPU), then restarted to
    // deliver what was queued. A second run with the worker delivering meanwhile is
    // reported in the notes.
    const before = await this.countMessages(this.conversation.id);
    await this.parley.worker.stop();
    log(
      `POST /messages on Parley (worker stopped): ${settings.connections} connections, ${settings.durationSeconds} s`,
    );
    const parley = await load(
      sendOptions(this.parley.baseUrl, key, this.conversation.id),
      { api: this.parley.pid },
      this.parley.pid,
    );
    const stored = (await this.countMessages(this.conversation.id)) - before;
    const left = await this.backlog();
    log(`restarting the worker to deliver the sends (${left.messages} outbox rows, ${left.jobs} jobs)`);
    const [{ now: restartedAt }] = await this.sql`select now()::text as now`;
    await this.parley.worker.start();
    const deliveryCpuBefore = cpuSnapshot(this.parley.worker.pid);
    let deliveryCpuAfter = null;
    const settled = await this.settle("after the sends", undefined, () => {
      deliveryCpuAfter = cpuSnapshot(this.parley.worker.pid);
    });
    const delivery = await this.deliveryRate(this.conversation.id, restartedAt);
    // The worker's and PostgreSQL's CPU per delivered message (the relay's work included).
    const deliveryCpu = cpuBetween(
      deliveryCpuBefore,
      deliveryCpuAfter ?? cpuSnapshot(this.parley.worker.pid),
      delivery.count,
    );
    log(
      `POST /messages on Parley, the worker delivering meanwhile: ${settings.connections} connections, ${settings.sustainedSeconds} s`,
    );
    const backlogSeries = [];
    const sampling = this.sampleQueued(backlogSeries);
    const sustained = await load(
      sendOptions(this.parley.baseUrl, key, this.conversation.id, { duration: settings.sustainedSeconds }),
      { api: this.parley.pid, worker: this.parley.worker.pid },
      this.parley.pid,
    );
    sampling.stop();
    await sampling.done;
    const sustainedSettled = await this.settle("after the sends with the worker running");
    const rowSizes = await this.baselineRowSizes();
    // Flat: over the last 5 s the backlog (messages still queued) holds less than 2 s of
    // sends, or grew by less than 5 % of the 5 s of sends since the 5 s before.
    const mean = (points) => (points.length ? points.reduce((sum, [, v]) => sum + v, 0) / points.length : 0);
    const end = settings.sustainedSeconds;
    const lastFive = mean(backlogSeries.filter(([t]) => t >= end - 5));
    const fiveBefore = mean(backlogSeries.filter(([t]) => t >= end - 10 && t < end - 5));
    const flat = lastFive <= 2 * sustained.rps || lastFive - fiveBefore <= 0.05 * 5 * sustained.rps;

    this.series.send = { parley, baseline: base, sustained, backlog: backlogSeries };
    const load2xx = (run) =>
      `${run.ok} 2xx, non-2xx ${run.non2xx}, errors ${run.errors}, timeouts ${run.timeouts}; ` +
      `p50 ${run.latency.p50} ms, p90 ${run.latency.p90} ms, p99.9 ${run.latency.p99_9} ms; ${describeCpu(run.cpu)}`;
    this.record("send_rps", parley.rps, {
      baseline: base.rps,
      ratio: parley.rps / base.rps,
      notes:
        `Parley: ${load2xx(parley)}; ${stored} messages stored (warm-up included). ` +
        `Baseline: ${load2xx(base)}; rows message/event/outbox ≈ ${rowSizes}. ` +
        `${settings.connections} connections, ${settings.durationSeconds} s after a ${settings.warmupSeconds} s warm-up; ` +
        `the worker stopped meanwhile and restarted after (${left.messages} outbox rows and ${left.jobs} jobs queued, ` +
        (settled.seconds === null ? "not drained in 5 min)" : `delivered in ${settled.seconds.toFixed(1)} s)`),
    });
    this.record("sustained_rps", sustained.rps, {
      baseline: base.rps,
      ratio: sustained.rps / base.rps,
      flat,
      notes:
        `Parley with its worker delivering on the same machine: ${load2xx(sustained)}; ` +
        `${settings.connections} connections, ${settings.sustainedSeconds} s after a ${settings.warmupSeconds} s warm-up; ` +
        `messages still queued: mean ${round(fiveBefore, 0)} in seconds ${end - 10}-${end - 5}, ${round(lastFive, 0)} in the last 5 s ` +
        `(${flat ? "flat" : "growing: the worker does not keep up"}); worker RSS max ${round(sustained.rss.max.worker)} MB; ` +
        (sustainedSettled.seconds === null
          ? "not drained in 5 min"
          : `drained ${sustainedSettled.seconds.toFixed(1)} s after`),
    });
    this.record("delivery_rps", delivery.rps, {
      notes:
        `${delivery.count} messages queued while the worker was stopped, delivered by one worker ` +
        `(default WORKER_CONCURRENCY) after its restart, each queued -> sent -> delivered with its two events; ` +
        `rate from the first delivered to the last (${delivery.seconds.toFixed(2)} s, by the messages' updated_at); ` +
        `CPU per delivery: worker ${deliveryCpu.msPerRequest.server} ms, PostgreSQL ${deliveryCpu.msPerRequest.postgres} ms ` +
        `(machine ${deliveryCpu.machineBusyPercent} % busy)`,
    });
    this.record("send_p99", parley.latency.p99, {
      baseline: base.latency.p99,
      ratio: parley.latency.p99 / base.latency.p99,
      notes: `autocannon's percentiles; p50 ${parley.latency.p50} ms vs baseline ${base.latency.p50} ms`,
    });
    const apiMax = parley.rss.max.api;
    this.record("memory_rss", apiMax, {
      baseline: base.rss.max.baseline,
      ratio: apiMax && base.rss.max.baseline ? apiMax / base.rss.max.baseline : null,
      notes:
        apiMax === null
          ? "VmRSS unavailable (not Linux?)"
          : `VmRSS every 200 ms during the Parley send load (${round(sustained.rss.max.api)} MB with the worker delivering meanwhile); baseline = the baseline server under its own load`,
    });
  }

  /** Messages of the conversation delivered since `since` (the worker's restart): how many, over how long. */
  async deliveryRate(conversationId, since) {
    const [row] = await this.sql`
      select count(*)::int as count,
             extract(epoch from max(updated_at) - min(updated_at))::float8 as seconds
      from messages
      where conversation_id = ${conversationId} and status = 'delivered' and updated_at >= ${since}::timestamptz`;
    const seconds = Math.max(row.seconds ?? 0, 0.001);
    // Deliveries per second in 0.5 s bins, from the first one: the report draws them.
    const bins = await this.sql`
      with delivered as (
        select updated_at from messages
        where conversation_id = ${conversationId} and status = 'delivered' and updated_at >= ${since}::timestamptz
      )
      select floor(extract(epoch from updated_at - (select min(updated_at) from delivered)) / 0.5)::int as bin,
             count(*)::int as n
      from delivered group by 1 order by 1`;
    this.series.delivery = { overTime: bins.map((bin) => [bin.bin * 0.5, bin.n * 2]) };
    return { count: row.count, seconds, rps: row.count / seconds };
  }

  /** Every second until stopped: the messages still queued, as [seconds, count] into `points`. */
  sampleQueued(points) {
    let running = true;
    const started = performance.now();
    const done = (async () => {
      while (running) {
        const [row] = await this.sql`select count(*)::int as n from messages where status = 'queued'`;
        points.push([round((performance.now() - started) / 1000, 1), row.n]);
        await sleep(1000);
      }
    })();
    return {
      done,
      stop: () => {
        running = false;
      },
    };
  }

  async countMessages(conversationId) {
    const [row] = await this.sql`select count(*)::int as n from messages where conversation_id = ${conversationId}`;
    return row.n;
  }

  async baselineRowSizes() {
    const [row] = await this.sql`
      select (select avg(pg_column_size(m.*)) from bench_baseline.messages m)::int as message,
             (select avg(pg_column_size(e.*)) from bench_baseline.events e)::int as event,
             (select avg(pg_column_size(o.*)) from bench_baseline.outbox o)::int as outbox`;
    return `${row.message}/${row.event}/${row.outbox} bytes`;
  }

  // --- Where a request's CPU goes: the same load on requests that stop at each layer ------

  /**
   * CPU per request of the API for requests that go one layer deeper each: the HTTP
   * stack and Parley's outer middleware, the /v1 router and an error body, the key
   * look-up and rate-limit count, a send without an Idempotency-Key, a send with one,
   * and a page of 25 (counted from the authenticated 404). The difference between two
   * rows is what that layer costs. Beside them, the baseline's 404, send and page.
   * Opt-in (`--only=layers`); printed, never written.
   */
  async phaseLayers() {
    const key = this.parley.testKey;
    const auth = { authorization: `Bearer ${key}` };
    const send = sendOptions(this.parley.baseUrl, key, this.conversation.id);
    const { requests: _withKey, ...sendWithoutKey } = send;
    const page = `/conversations/${this.conversation.id}/messages?limit=25`;
    const authenticated404 = "GET /v1/nothing with a key (404: key look-up and rate-limit count)";
    // `after`: the row this one goes one layer deeper than (the one before it, by default);
    // `before`: what must happen before its load.
    const rows = [
      { name: "baseline: express's 404", server: this.baseline, options: { url: `${this.baseline.url}/nothing` } },
      {
        name: "baseline: send",
        server: this.baseline,
        options: sendOptions(this.baseline.url, key, this.conversation.id),
      },
      {
        name: "GET /healthz (HTTP, request id, log, rate-limit headers)",
        server: this.parley,
        options: { url: `${this.parley.publicBaseUrl}/healthz` },
      },
      {
        name: "GET /v1/nothing without a key (401: the /v1 router, an error body)",
        server: this.parley,
        options: { url: `${this.parley.baseUrl}/nothing` },
      },
      {
        name: authenticated404,
        server: this.parley,
        options: { url: `${this.parley.baseUrl}/nothing`, headers: auth },
      },
      { name: "POST /v1/messages without an Idempotency-Key", server: this.parley, options: sendWithoutKey },
      { name: "POST /v1/messages with an Idempotency-Key (the figure's request)", server: this.parley, options: send },
      // The sends above filled the conversation on both servers.
      {
        name: "baseline: page of 25",
        server: this.baseline,
        options: { url: this.baseline.url + page },
        before: () => this.analyzeMessages(),
      },
      {
        name: "GET page of 25 (the figure's request)",
        server: this.parley,
        options: { url: this.parley.baseUrl + page, headers: auth },
        after: authenticated404,
      },
    ];
    await this.parley.worker.stop();
    this.layers = [];
    const cpuOf = new Map();
    let previous = null;
    for (const { name, server, options, after, before } of rows) {
      await before?.();
      log(`layers: ${name}, ${settings.connections} connections, ${settings.durationSeconds} s`);
      const run = await load(options, {}, server.pid);
      const cpu = run.cpu?.msPerRequest.server ?? null;
      const isParley = server === this.parley;
      const below = after ? cpuOf.get(after) : previous;
      this.layers.push({
        request: name,
        "req/s": round(run.rps, 0),
        "server CPU/request": cpu === null ? "-" : `${cpu} ms`,
        "added by this layer":
          isParley && typeof below === "number" && cpu !== null ? `${round(cpu - below, 3)} ms` : "-",
        "non-2xx": run.non2xx,
      });
      cpuOf.set(name, cpu);
      if (isParley) previous = cpu;
    }
    await this.parley.worker.start();
    await this.settle("after the layers");
  }

  // --- GET a page of 25, Parley vs baseline ---------------------------------------------

  /**
   * As autovacuum would after the sends (its first pass can be a minute away): both
   * tables' statistics are current, so both pages are read by their index.
   */
  async analyzeMessages() {
    await this.sql`analyze messages`;
    await this.sql`analyze bench_baseline.messages`;
  }

  /** Without the send phase, the conversation (and the baseline's) is filled first. */
  async fillConversation() {
    if ((await this.countMessages(this.conversation.id)) >= 1000) return;
    log("filling the conversation with 1000 messages on Parley and on the baseline");
    for (const url of [this.parley.baseUrl, this.baseline.url]) {
      await autocannon(
        sendOptions(url, this.parley.testKey, this.conversation.id, {
          connections: settings.connections,
          amount: 1000,
        }),
      );
    }
    await this.settle("after filling the conversation");
  }

  async phaseList() {
    const key = this.parley.testKey;
    await this.fillConversation();
    await this.analyzeMessages();
    const pathname = `/conversations/${this.conversation.id}/messages?limit=25`;
    const headers = { authorization: `Bearer ${key}` };
    const check = await this.api("GET", pathname);
    if (check.data.length !== 25) throw new Error(`a page had ${check.data.length} messages, not 25`);
    log(`GET page of 25 on the baseline: ${settings.connections} connections, ${settings.durationSeconds} s`);
    const base = await load({ url: this.baseline.url + pathname, headers }, {}, this.baseline.pid);
    log(`GET page of 25 on Parley: ${settings.connections} connections, ${settings.durationSeconds} s`);
    const parley = await load(
      { url: this.parley.baseUrl + pathname, headers },
      { api: this.parley.pid },
      this.parley.pid,
    );
    const total = await this.countMessages(this.conversation.id);
    this.series.list = { parley, baseline: base };
    const describe = (run) =>
      `${run.ok} 2xx, non-2xx ${run.non2xx}, errors ${run.errors}; p50 ${run.latency.p50} ms, p99.9 ${run.latency.p99_9} ms; ${describeCpu(run.cpu)}`;
    this.record("list_rps", parley.rps, {
      baseline: base.rps,
      ratio: parley.rps / base.rps,
      notes: `Parley: ${describe(parley)}. Baseline: ${describe(base)}. The newest 25 of ${total} messages; ${settings.connections} connections, ${settings.durationSeconds} s`,
    });
    this.record("list_p99", parley.latency.p99, {
      baseline: base.latency.p99,
      ratio: parley.latency.p99 / base.latency.p99,
      notes: `autocannon's percentiles; p50 ${parley.latency.p50} ms vs baseline ${base.latency.p50} ms`,
    });
  }

  // --- Levers: what each hot-path mechanism earns, A/B --------------------------------

  /**
   * For each lever (LEVERS, or those named by BENCH_LEVERS): two fresh API processes on
   * this database, A as configured and B with the lever off, each load of the lever run on
   * one then the other for `leverRounds` rounds, the order alternating. Per load: the
   * median of B's throughput (or webhook latency) over A's, the CPU per request of each,
   * and the rounds A did better. Printed, and written to bench/levers.json.
   */
  async phaseLevers() {
    const wanted = (process.env.BENCH_LEVERS ?? "")
      .split(",")
      .map((name) => name.trim())
      .filter(Boolean);
    const levers = wanted.length ? LEVERS.filter((lever) => wanted.includes(lever.name)) : LEVERS;
    if (wanted.length && levers.length !== wanted.length) {
      throw new Error(`BENCH_LEVERS: known levers are ${LEVERS.map((lever) => lever.name).join(", ")}`);
    }
    await this.fillConversation();
    const spread = await this.spreadLoads();
    await this.analyzeMessages();
    const key = this.parley.testKey;
    const loads = {
      page_single: (url) => ({
        url: `${url}/conversations/${this.conversation.id}/messages?limit=25`,
        headers: { authorization: `Bearer ${key}` },
      }),
      page_spread: (url) => spread.pageOptions(url),
      send_single: (url) => sendOptions(url, key, this.conversation.id),
      send_spread: (url) => spread.sendOptions(url),
    };
    this.levers = [];
    for (const lever of levers) {
      const other = lever.buildRoot ? `the build at ${lever.buildRoot}` : JSON.stringify(lever.env);
      log(`levers: ${lever.name}: A as configured, B with ${other}`);
      const sides = {
        A: await startApiProcess(this.parley.databaseUrl),
        B: await startApiProcess(this.parley.databaseUrl, lever.env, lever.buildRoot),
      };
      const sends = lever.loads.some((name) => name.startsWith("send"));
      if (sends) await this.parley.worker.stop();
      const endpoint = lever.loads.includes("webhook_latency") ? await this.createWebhook(["contact.created"]) : null;
      try {
        const measured = Object.fromEntries(lever.loads.map((name) => [name, { A: [], B: [] }]));
        for (let round = 0; round < settings.leverRounds; round++) {
          const order = round % 2 === 0 ? ["A", "B"] : ["B", "A"];
          for (const name of lever.loads) {
            for (const side of order) {
              const server = sides[side];
              if (name === "webhook_latency") {
                const api = client(server.baseUrl, key);
                const count = Math.round(settings.webhookRate * settings.leverSeconds);
                await this.webhookLatencies(api, Math.round(settings.webhookRate), "Lever warm-up");
                const run = await this.webhookLatencies(api, count, "Lever");
                const stats = summary(run.latencies);
                log(
                  `levers: ${lever.name}: ${side}: p50 ${stats.p50.toFixed(1)} ms, p99 ${stats.p99.toFixed(1)} ms; medians (answer + after): all ${JSON.stringify(run.tail.all)}, slowest 1 % ${JSON.stringify(run.tail.slowest)}`,
                );
                measured[name][side].push({ value: stats.p50, p99: stats.p99 });
                continue;
              }
              const run = await load(
                {
                  ...loads[name](server.baseUrl),
                  duration: settings.leverSeconds,
                  warmup: { connections: settings.connections, duration: 1 },
                },
                {},
                server.pid,
              );
              measured[name][side].push({
                value: run.rps,
                cpu: run.cpu?.msPerRequest.server ?? null,
                non2xx: run.non2xx,
              });
            }
          }
          log(`levers: ${lever.name}: round ${round + 1} of ${settings.leverRounds} done`);
        }
        for (const [name, { A, B }] of Object.entries(measured)) {
          const latency = name === "webhook_latency";
          const ratios = A.map((a, i) => B[i].value / a.value);
          const aBetter = A.filter((a, i) => (latency ? a.value < B[i].value : a.value > B[i].value)).length;
          const cpu = (side) =>
            median(side.map((each) => each.cpu).filter((value) => value !== null && value !== undefined));
          this.levers.push({
            lever: lever.name,
            load: name,
            A: round(median(A.map((each) => each.value)), latency ? 1 : 0),
            B: round(median(B.map((each) => each.value)), latency ? 1 : 0),
            "B / A (median)": round(median(ratios), 2),
            "A better": `${aBetter} of ${A.length}`,
            "CPU/request A": latency
              ? `p99 ${round(median(A.map((each) => each.p99)), 1)} ms`
              : `${round(cpu(A), 3)} ms`,
            "CPU/request B": latency
              ? `p99 ${round(median(B.map((each) => each.p99)), 1)} ms`
              : `${round(cpu(B), 3)} ms`,
            "non-2xx": latency ? "-" : [...A, ...B].reduce((sum, each) => sum + each.non2xx, 0),
          });
        }
      } finally {
        if (endpoint) await this.deleteWebhook(endpoint);
        await sides.A.stop();
        await sides.B.stop();
        if (sends) await this.parley.worker.start();
      }
      await this.settle(`after the lever ${lever.name}`);
    }
  }

  // --- Spread traffic: sends and pages over many conversations, Parley vs baseline -----

  /**
   * `spreadConversations` sandbox WhatsApp conversations (each with an inbound message, so
   * sends are accepted) of `spreadMessages` messages each, the same on the baseline; then,
   * in `spreadRounds` rounds, the baseline's page and Parley's, the baseline's send and
   * Parley's, each request to a conversation drawn at random. Where every request hits
   * one conversation, a page is answered from the API's message texts and every send waits
   * on one row's lock; here neither holds, as with real traffic.
   */
  async phaseSpread() {
    const count = settings.spreadConversations;
    const { pageOptions, sendOptions: sendSpreadOptions } = await this.spreadLoads();
    const describe = (run) =>
      `${run.ok} 2xx, non-2xx ${run.non2xx}, errors ${run.errors}; p50 ${run.latency.p50} ms, p99 ${run.latency.p99} ms; ${describeCpu(run.cpu)}`;
    this.series.spread = [];
    for (let round = 1; round <= settings.spreadRounds; round++) {
      const label = `spread, round ${round} of ${settings.spreadRounds}`;
      log(`${label}: pages on the baseline, then on Parley`);
      const basePage = await load(pageOptions(this.baseline.url), {}, this.baseline.pid);
      const parleyPage = await load(pageOptions(this.parley.baseUrl), {}, this.parley.pid);
      log(`${label}: sends on the baseline, then on Parley (worker stopped)`);
      const baseSend = await load(sendSpreadOptions(this.baseline.url), {}, this.baseline.pid);
      await this.parley.worker.stop();
      const parleySend = await load(sendSpreadOptions(this.parley.baseUrl), {}, this.parley.pid);
      await this.parley.worker.start();
      await this.settle(`after ${label}`);
      this.series.spread.push({ basePage, parleyPage, baseSend, parleySend });
      const scope = `round ${round}: ${count} conversations of ${settings.spreadMessages}+ messages, a random one per request`;
      this.record("spread_list_rps", parleyPage.rps, {
        baseline: basePage.rps,
        ratio: parleyPage.rps / basePage.rps,
        notes: `${scope}. Parley: ${describe(parleyPage)}. Baseline: ${describe(basePage)}`,
      });
      this.record("spread_send_rps", parleySend.rps, {
        baseline: baseSend.rps,
        ratio: parleySend.rps / baseSend.rps,
        notes: `${scope}; Parley's worker stopped meanwhile. Parley: ${describe(parleySend)}. Baseline: ${describe(baseSend)}`,
      });
    }
  }

  /**
   * The spread conversations, made once a run, and the autocannon options of a page and of
   * a send to one of them drawn at random, for a server's base URL.
   */
  async spreadLoads() {
    if (!this.spreadIds) {
      const count = settings.spreadConversations;
      log(`spread: ${count} conversations of ${settings.spreadMessages} messages on Parley and on the baseline`);
      const prepared = performance.now();
      const ids = await this.spreadConversations(count);
      await this.fillSpreadConversations(ids);
      await this.analyzeMessages();
      this.spreadIds = ids;
      log(`spread: prepared in ${((performance.now() - prepared) / 1000).toFixed(1)} s`);
    }
    const ids = this.spreadIds;
    const pick = () => ids[Math.floor(Math.random() * ids.length)];
    const key = this.parley.testKey;
    return {
      pageOptions: (url) => {
        const prefix = new URL(url).pathname.replace(/\/$/, "");
        return {
          url: `${url}/conversations/${ids[0]}/messages?limit=25`,
          headers: { authorization: `Bearer ${key}` },
          requests: [
            {
              setupRequest: (request) => ({ ...request, path: `${prefix}/conversations/${pick()}/messages?limit=25` }),
            },
          ],
        };
      },
      sendOptions: (url) => {
        const options = sendOptions(url, key, ids[0]);
        const [{ setupRequest }] = options.requests;
        return {
          ...options,
          requests: [{ setupRequest: (request) => ({ ...setupRequest(request), body: sendBody(pick()) }) }],
        };
      },
    };
  }

  /** `count` sendable conversations (contact, conversation, an inbound message), 16 made at a time. */
  async spreadConversations(count) {
    const ids = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < count) {
          const index = next++;
          const conversation = await this.newConversation(`Spread ${index}`, this.whatsapp.id);
          ids.push(conversation.id);
        }
      }),
    );
    return ids;
  }

  /**
   * Each conversation's other messages (one fewer than `spreadMessages`: the inbound one is
   * there) with one INSERT ... SELECT, older than its inbound message, as in insertMessages;
   * and the baseline's conversations of the same ids with as many.
   */
  async fillSpreadConversations(ids) {
    const perConversation = settings.spreadMessages - 1;
    await this.sql.unsafe(
      `insert into messages (id, organization_id, environment, conversation_id, direction, type, text,
                             metadata, status, created_at, updated_at)
       select ${messageIdSql("1000")},
              organization_id, environment, conversation_id,
              case when k % 3 = 0 then 'inbound' else 'outbound' end,
              'text',
              'Spread message number ' || k || ': the quick brown fox jumps over the lazy dog.',
              '{}'::jsonb,
              case when k % 3 = 0 then null else 'delivered' end,
              ts, ts
       from (
         select c.organization_id, c.environment, c.id as conversation_id, k, n * 1000 + k as i, ts,
                (extract(epoch from ts) * 1000)::bigint as ms
         from (select organization_id, environment, id, row_number() over (order by id) as n
               from conversations where id = any($1::text[])) c
         cross join generate_series(1, $2::int) as k
         cross join lateral (select now() - make_interval(secs => 3600 + ($2::int - k) * 60) as ts) t
       ) s`,
      [ids, perConversation],
    );
    await this.sql.unsafe(
      `insert into bench_baseline.messages (id, conversation_id, direction, type, text, metadata, status,
                                            created_at, updated_at)
       select 'msg_spread_' || n || '_' || k, id,
              case when k % 3 = 0 then 'inbound' else 'outbound' end,
              'text',
              'Spread message number ' || k || ': the quick brown fox jumps over the lazy dog.',
              '{}'::jsonb,
              case when k % 3 = 0 then null else 'delivered' end,
              now() - make_interval(secs => 3600 + ($2::int - k) * 60),
              now() - make_interval(secs => 3600 + ($2::int - k) * 60)
       from unnest($1::text[]) with ordinality as c(id, n)
       cross join generate_series(1, $2::int + 1) as k`,
      [ids, perConversation],
    );
  }

  // --- A page deep in a list of BENCH_DEEP_ROWS messages ---------------------------------

  async phaseDeepPage() {
    const rows = Math.max(2000, Math.floor(settings.deepRows));
    const conversation = await this.newConversation("Bench deep list");
    const [{ organization_id: organizationId, environment }] = await this.sql`
      select organization_id, environment from conversations where id = ${conversation.id}`;
    log(`inserting ${rows} messages into one conversation`);
    const insertStarted = performance.now();
    const { oldest } = await this.insertMessages(conversation.id, organizationId, environment, rows);
    await this.sql`vacuum analyze messages`;
    const insertSeconds = (performance.now() - insertStarted) / 1000;
    log(`inserted and analysed in ${insertSeconds.toFixed(1)} s`);

    const base = `/conversations/${conversation.id}/messages?limit=25`;
    // The cursor is signed by the server: reach the old end with created_before (1,000
    // rows from the oldest), then follow that page's next_cursor once.
    const near = new Date(oldest.getTime() + 1000 * 1000).toISOString();
    const entry = await this.api("GET", `${base}&created_before=${encodeURIComponent(near)}`);
    if (!entry.pagination.next_cursor) throw new Error("the page near the oldest end has no next_cursor");
    const deepPath = `${base}&after=${encodeURIComponent(entry.pagination.next_cursor)}`;
    const first = await this.api("GET", base);
    const deep = await this.api("GET", deepPath);
    if (first.data.length !== 25 || deep.data.length !== 25) throw new Error("a page did not have 25 messages");
    const [{ position }] = await this.sql`
      select count(*)::int as position from messages
      where conversation_id = ${conversation.id} and (created_at, id) >= (
        select created_at, id from messages where id = ${deep.data[0].id})`;

    const samples = Math.max(20, settings.samples);
    const timed = async (pathname) => {
      const started = performance.now();
      await this.api("GET", pathname);
      return performance.now() - started;
    };
    // A slow list must not hold the run for long: warm-up and samples stop after 2 minutes
    // (with at least 20 samples each); the notes give the count.
    const budgetEnds = performance.now() + 120_000;
    for (let i = 0; i < 10 && performance.now() < budgetEnds; i++) {
      await timed(base);
      await timed(deepPath);
    }
    const firstTimes = [];
    const deepTimes = [];
    // Interleaved, so a slow moment of a busy machine hits both alike.
    for (let i = 0; i < samples && (i < 20 || performance.now() < budgetEnds); i++) {
      firstTimes.push(await timed(base));
      deepTimes.push(await timed(deepPath));
    }
    const firstStats = summary(firstTimes);
    const deepStats = summary(deepTimes);
    this.series.deep = { first: firstStats, deep: deepStats };
    this.record("deep_page", deepStats.p50, {
      baseline: firstStats.p50,
      ratio: deepStats.p50 / firstStats.p50,
      notes:
        `${rows} messages in one conversation (inserted with SQL in ${insertSeconds.toFixed(0)} s); ` +
        `deep page starts at message #${position} from the newest; ${firstTimes.length} sequential requests each, interleaved; ` +
        `p50 first ${firstStats.p50.toFixed(1)} ms, deep ${deepStats.p50.toFixed(1)} ms; ` +
        `p99 first ${firstStats.p99.toFixed(1)} ms, deep ${deepStats.p99.toFixed(1)} ms`,
    });
  }

  /**
   * `rows` messages into one conversation with one INSERT ... SELECT generate_series:
   * the column set of packages/db/src/tables/messages.ts, created_at one second apart
   * (oldest first), ids `msg_` + a ULID of that instant, so (created_at, id) ascend together.
   */
  async insertMessages(conversationId, organizationId, environment, rows) {
    const [{ oldest, superuser }] = await this.sql`
      select now() - make_interval(secs => ${rows + 3600}) as oldest,
             (select rolsuper from pg_roles where rolname = current_user) as superuser`;
    const insertChunk = (from, to) =>
      this.sql.begin(async (tx) => {
        // The rows are valid by construction (their conversation exists): as a superuser
        // (the embedded database's user is one) the per-row foreign-key triggers are skipped.
        if (superuser) await tx`set local session_replication_role = replica`;
        await tx.unsafe(
          `insert into messages (id, organization_id, environment, conversation_id, direction, type, text,
                                 metadata, status, created_at, updated_at)
           select ${messageIdSql("0000")},
                  $1, $2::environment, $3,
                  case when i % 3 = 0 then 'inbound' else 'outbound' end,
                  'text',
                  'Deep list message number ' || i || ': the quick brown fox jumps over the lazy dog.',
                  '{}'::jsonb,
                  case when i % 3 = 0 then null else 'delivered' end,
                  ts, ts
           from (
             select i, ts, (extract(epoch from ts) * 1000)::bigint as ms
             from (select i, $4::timestamptz + make_interval(secs => i) as ts
                   from generate_series($5::int, $6::int) as i) s
           ) t`,
          [organizationId, environment, conversationId, oldest, from, to],
        );
      });
    // Chunks of 100,000 rows on two connections side by side (this.sql has two).
    const chunk = 100_000;
    const chunks = [];
    for (let from = 1; from <= rows; from += chunk) chunks.push([from, Math.min(rows, from + chunk - 1)]);
    let done = 0;
    await Promise.all(
      [0, 1].map(async () => {
        for (let next = chunks.shift(); next; next = chunks.shift()) {
          await insertChunk(...next);
          done += next[1] - next[0] + 1;
          log(`  ${done} of ${rows}`);
        }
      }),
    );
    return { oldest: new Date(oldest) };
  }

  // --- API call -> webhook arriving, at 100 events/s -------------------------------------

  async phaseWebhookLatency() {
    const endpoint = await this.createWebhook(["contact.created"]);
    // A warm-up at the same rate, as the autocannon loads have: the first seconds of a
    // process (JIT, connections) are not the figure.
    const warmup = Math.round(settings.webhookRate * settings.warmupSeconds);
    if (warmup > 0) {
      log(`webhook latency: warm-up, ${warmup} POST /contacts at ${settings.webhookRate}/s`);
      await this.webhookLatencies(this.api, warmup, "Webhook warm-up");
    }
    const total = Math.max(10, Math.round(settings.webhookRate * settings.durationSeconds));
    log(`webhook latency: ${total} POST /contacts at ${settings.webhookRate}/s`);
    const run = await this.webhookLatencies(this.api, total, "Webhook latency");
    await this.deleteWebhook(endpoint);
    if (run.latencies.length === 0) throw new Error("no webhook arrived at the receiver");
    const stats = summary(run.latencies);
    this.series.webhookLatency = { ...stats, overTime: run.overTime };
    const notes =
      `${run.calls} contacts created in ${run.seconds.toFixed(1)} s (open loop, ${settings.webhookRate}/s, ${run.failures} failed; after a ${settings.warmupSeconds} s warm-up at the same rate); ` +
      `${run.latencies.length} webhooks matched by contact id, ${run.calls - run.latencies.length} missing after 30 s, ${run.duplicates} duplicates; ` +
      `latency = arrival at the receiver - start of the API call; ` +
      `medians, the API's answer + after it: all ${tailText(run.tail.all)}, the slowest 1 % (${run.tail.slowest_count}) ${tailText(run.tail.slowest)}, started at ${run.tail.slowest_at_s.join(", ")} s; PostgreSQL then: ${JSON.stringify(run.tail.postgres_then)} (busy sessions at most ${run.tail.postgres_active_max_overall} over the run); the runner's own event loop delayed at most ${run.tail.runner_loop_delay_max_ms} ms; autovacuum meanwhile: ${run.tail.autovacuum.join("; ") || "none"}`;
    this.record("webhook_latency_p50", stats.p50, { notes });
    this.record("webhook_latency_p99", stats.p99, { notes: `max ${stats.max.toFixed(1)} ms` });
    await this.settle("after the webhook latency");
  }

  /**
   * `count` POST /contacts through `api` at settings.webhookRate (an open loop: each call
   * starts at its time, whether or not the previous ones ended), each matched with its
   * contact.created webhook at the receiver (an endpoint for it must exist): the latency
   * from the call's start to the arrival.
   */
  async webhookLatencies(api, count, name) {
    const arrivals = new Map();
    let duplicates = 0;
    this.receiver.listen((envelope, arrived) => {
      const id = envelope?.data?.contact?.id;
      if (!id) return;
      if (arrivals.has(id)) duplicates++;
      else arrivals.set(id, arrived);
    });
    const interval = 1000 / settings.webhookRate;
    const starts = new Map();
    const answers = new Map();
    let failures = 0;
    const requests = [];
    const origin = performance.now();
    const postgresSamples = samplePostgres(this.sql, origin);
    // The runner is the client and the receiver: a stall of its own would look like Parley's.
    const runnerDelay = monitorEventLoopDelay({ resolution: 10 });
    runnerDelay.enable();
    for (let i = 0; i < count; i++) {
      const wait = origin + i * interval - performance.now();
      if (wait > 0) await sleep(wait);
      const started = performance.now();
      requests.push(
        api("POST", "/contacts", { name: `${name} ${i}` }).then(
          (contact) => {
            starts.set(contact.id, started);
            answers.set(contact.id, performance.now() - started);
          },
          () => failures++,
        ),
      );
    }
    const seconds = (performance.now() - origin) / 1000;
    await Promise.all(requests);
    const { autovacuum, activity } = await postgresSamples.stop();
    runnerDelay.disable();
    const deadline = performance.now() + 30_000;
    while ([...starts.keys()].some((id) => !arrivals.has(id)) && performance.now() < deadline) await sleep(50);
    this.receiver.listen(() => {});
    const latencies = [];
    const overTime = [];
    for (const [id, started] of starts) {
      const arrived = arrivals.get(id);
      if (arrived === undefined) continue;
      latencies.push(arrived - started);
      overTime.push([round((started - origin) / 1000, 2), round(arrived - started, 1)]);
    }
    overTime.sort((a, b) => a[0] - b[0]);
    // Where the slowest hundredth's time went: the API's answer, or after it (relay, queue, worker).
    const byLatency = [...starts.keys()]
      .filter((id) => arrivals.has(id))
      .map((id) => ({
        total: arrivals.get(id) - starts.get(id),
        answer: answers.get(id),
        at: (starts.get(id) - origin) / 1000,
      }))
      .sort((a, b) => a.total - b.total);
    const slowest = byLatency.slice(Math.floor(byLatency.length * 0.99));
    const split = (rows) =>
      rows.length === 0
        ? null
        : {
            answer_ms: round(median(rows.map((row) => row.answer)), 1),
            after_ms: round(median(rows.map((row) => row.total - row.answer)), 1),
          };
    const tail = {
      all: split(byLatency),
      slowest: split(slowest),
      slowest_count: slowest.length,
      slowest_at_s: slowest.map((row) => round(row.at, 1)).sort((a, b) => a - b),
      runner_loop_delay_max_ms: round(runnerDelay.max / 1e6, 1),
      postgres_then: postgresAround(activity, slowest),
      postgres_active_max_overall: Math.max(0, ...activity.map((sample) => sample.active)),
      autovacuum: [...autovacuum].map(([query, at]) => `${at} s: ${query.replace(/^autovacuum: /, "")}`),
    };
    return { calls: starts.size, seconds, failures, duplicates, latencies, overTime, tail };
  }

  // --- Webhook deliveries per second from a backlog --------------------------------------

  async phaseWebhookThroughput() {
    const events = Math.max(settings.connections, Math.floor(settings.webhookEvents));
    const endpoint = await this.createWebhook(["contact.created"]);
    log(`webhook throughput: stopping the worker, creating ${events} contacts (one contact.created event each)`);
    await this.parley.worker.stop();
    const created = await autocannon({
      url: `${this.parley.baseUrl}/contacts`,
      method: "POST",
      connections: settings.connections,
      amount: events,
      headers: { authorization: `Bearer ${this.parley.testKey}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "Webhook backlog" }),
    });
    const backlog = await this.backlog();
    const seen = new Set();
    const times = [];
    let duplicates = 0;
    let done;
    const finished = new Promise((resolve) => (done = resolve));
    this.receiver.listen((envelope, arrived) => {
      if (envelope?.type !== "contact.created") return;
      if (seen.has(envelope.id)) {
        duplicates++;
        return;
      }
      seen.add(envelope.id);
      times.push(arrived);
      if (seen.size >= created["2xx"]) done();
    });
    log(`restarting the worker with ${backlog.events} events in the outbox`);
    const restarted = performance.now();
    await this.parley.worker.start();
    const cpuBefore = cpuSnapshot(this.parley.worker.pid);
    // Until every event arrived, or 30 s without a new one.
    for (;;) {
      const last = times.length ? times[times.length - 1] : restarted;
      const quiet = performance.now() - last;
      if (seen.size >= created["2xx"] || quiet > 30_000) break;
      await Promise.race([finished, sleep(1000)]);
    }
    // The worker's, PostgreSQL's and the receiver's (this process) CPU per event arrived.
    const cpu = cpuBetween(cpuBefore, cpuSnapshot(this.parley.worker.pid), times.length);
    this.receiver.listen(() => {});
    await this.deleteWebhook(endpoint);
    if (times.length < 2) throw new Error(`only ${times.length} webhooks arrived`);
    const first = times[0];
    const last = times[times.length - 1];
    const rate = (times.length - 1) / ((last - first) / 1000);
    this.series.webhookThroughput = { overTime: ratePerSecond(times, first, 500) };
    this.record("webhook_throughput", rate, {
      notes:
        `a backlog of ${backlog.events} contact.created events (${created["2xx"]} contacts created through the API, ` +
        `non-2xx ${created.non2xx}) written while the worker was stopped, then the worker restarted; ` +
        `${times.length} distinct events arrived (${duplicates} duplicates), rate from the first to the last arrival ` +
        `(${((last - first) / 1000).toFixed(1)} s; first arrival ${((first - restarted) / 1000).toFixed(1)} s after the restart began); ` +
        `worker concurrency ${process.env.WORKER_CONCURRENCY ?? "10 (default)"}; ` +
        (cpu.machineBusyPercent === null
          ? "CPU not measured (not Linux?)"
          : `machine ${cpu.machineBusyPercent} % busy; CPU per event: worker ${cpu.msPerRequest.server} ms, ` +
            `PostgreSQL ${cpu.msPerRequest.postgres} ms, receiver (the bench) ${cpu.msPerRequest.loadGenerator} ms`),
    });
    await this.settle("after the webhook throughput");
  }

  // --- Send -> delivered -----------------------------------------------------------------

  async phaseDelivered() {
    const conversation = await this.newConversation("Bench delivered", this.whatsapp.id);
    const endpoint = await this.createWebhook(["message.delivered"]);
    const webhookArrivals = new Map();
    this.receiver.listen((envelope, arrived) => {
      const id = envelope?.data?.message?.id;
      if (envelope?.type === "message.delivered" && id && !webhookArrivals.has(id)) webhookArrivals.set(id, arrived);
    });
    const samples = Math.max(1, settings.samples);
    log(`send -> delivered: ${samples} sequential sends, polled with GET /messages/{id}`);
    const polled = [];
    const starts = new Map();
    for (let i = 0; i < samples; i++) {
      const started = performance.now();
      const message = await this.api("POST", "/messages", {
        conversation_id: conversation.id,
        type: "text",
        text: `ping ${i}`,
      });
      starts.set(message.id, started);
      await this.waitDelivered(message.id, 30_000);
      polled.push(performance.now() - started);
    }
    const deadline = performance.now() + 10_000;
    while (webhookArrivals.size < starts.size && performance.now() < deadline) await sleep(50);
    this.receiver.listen(() => {});
    await this.deleteWebhook(endpoint);
    const viaWebhook = [...starts]
      .filter(([id]) => webhookArrivals.has(id))
      .map(([id, t]) => webhookArrivals.get(id) - t);
    const stats = summary(polled);
    const hooks = viaWebhook.length ? summary(viaWebhook) : null;
    this.series.delivered = { polled: stats, webhook: hooks };
    const hookNote = hooks
      ? `as seen by a message.delivered webhook: p50 ${hooks.p50.toFixed(1)} ms, p99 ${hooks.p99.toFixed(1)} ms (${hooks.count} of ${samples})`
      : "no message.delivered webhook arrived";
    this.record("delivered_p50", stats.p50, {
      notes: `${samples} sequential sends on a sandbox WhatsApp conversation, each polled with GET /messages/{id} until delivered; ${hookNote}`,
    });
    this.record("delivered_p99", stats.p99, { notes: `max ${stats.max.toFixed(1)} ms` });
    await this.settle("after send -> delivered");
  }

  // --- Upload of a 5 MB JPEG -------------------------------------------------------------

  async phaseUpload() {
    const image = await fiveMegabyteJpeg();
    const uploads = Math.max(1, settings.uploads);
    log(`uploads: ${uploads} sequential 5 MB JPEGs`);
    const times = [];
    for (let i = 0; i < uploads + 2; i++) {
      const form = new FormData();
      form.append("file", new Blob([image], { type: "image/jpeg" }), "photo.jpg");
      const started = performance.now();
      const response = await fetch(`${this.parley.baseUrl}/uploads`, {
        method: "POST",
        headers: { authorization: `Bearer ${this.parley.testKey}` },
        body: form,
      });
      const text = await response.text();
      if (response.status !== 201) throw new Error(`upload answered ${response.status}: ${text}`);
      // The first two warm up sharp and the connection.
      if (i >= 2) times.push(performance.now() - started);
    }
    const stats = summary(times);
    this.series.upload = stats;
    this.record("upload_p50", stats.p50, {
      notes: `${uploads} sequential uploads of a ${(image.length / 1024 / 1024).toFixed(1)} MB JPEG with EXIF (after 2 warm-ups), POST /uploads answered 201; p99 ${stats.p99.toFixed(0)} ms`,
    });
  }

  // --- Results ---------------------------------------------------------------------------

  results(phases) {
    const figures = FIGURES.filter((figure) => phases.has(figure.phase)).map((figure) =>
      figureResult(figure, this.measured[figure.key]?.repetitions ?? []),
    );
    return { machine: this.machine, figures, series: this.series };
  }
}

async function fiveMegabyteJpeg() {
  // Noise does not compress: a 2200 x 1800 JPEG at quality 100 is 5.0 MB.
  const width = 2200;
  const height = 1800;
  const noise = Buffer.alloc(width * height * 3);
  for (let i = 0; i < noise.length; i++) noise[i] = (i * 2654435761) >>> 24;
  return sharp(noise, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 100 })
    .withExif({ IFD0: { Copyright: "bench" } })
    .toBuffer();
}

function printResults(results) {
  const format = (value, unit) => (value === null ? "-" : `${value} ${unit}`);
  printTable(
    results.figures.map((figure) => ({
      figure: figure.name,
      value: format(figure.value, figure.unit),
      target: figure.target,
      baseline: format(figure.baseline, figure.unit),
      ratio: figure.ratio === null ? "-" : `${figure.ratio}x`,
      met: figure.met === null ? "-" : figure.met ? "yes" : "MISSED",
    })),
  );
  console.log("\nNotes:");
  for (const figure of results.figures) console.log(`- ${figure.name}: ${figure.notes}`);
}

async function main() {
  const phases = phasesAsked();
  const started = performance.now();
  const bench = new Bench();
  // Ctrl-C: the child processes get the signal too; remove the temporary database.
  process.once("SIGINT", () => {
    log("interrupted: stopping Parley and the baseline");
    void bench.stop().finally(() => process.exit(130));
  });
  let fatal;
  try {
    await bench.start();
    const run = {
      send: () => bench.phaseSend(),
      list: () => bench.phaseList(),
      deep_page: () => bench.phaseDeepPage(),
      spread: () => bench.phaseSpread(),
      webhook_latency: () => bench.phaseWebhookLatency(),
      webhook_throughput: () => bench.phaseWebhookThroughput(),
      delivered: () => bench.phaseDelivered(),
      upload: () => bench.phaseUpload(),
      layers: () => bench.phaseLayers(),
      levers: () => bench.phaseLevers(),
    };
    for (const [phase, repetition] of phaseOrder(phases, settings.repetitions)) {
      if (repetition > 0) log(`${phase}: repetition ${repetition} of ${settings.repetitions}`);
      try {
        await run[phase]();
      } catch (error) {
        bench.errors.push(`${phase}: ${error.stack ?? error}`);
        log(`phase ${phase} failed: ${error.message}`);
        // The worker may have been left stopped by a failed phase.
        await bench.parley.worker.start().catch(() => {});
      }
    }
  } catch (error) {
    fatal = error;
  } finally {
    await bench.stop().catch((error) => bench.errors.push(`stopping: ${error.stack ?? error}`));
  }
  if (fatal) throw fatal;

  const results = bench.results(phases);
  results.machine.run_seconds = Math.round((performance.now() - started) / 1000);
  console.log("");
  if (results.figures.length > 0) printResults(results);
  if (bench.layers) {
    console.log("\nWhere a request's CPU goes (the API's CPU per request, each row one layer deeper):");
    printTable(bench.layers);
  }
  if (bench.levers?.length) {
    console.log("\nLevers, A/B (A as configured, B with the lever off; medians of the rounds):");
    printTable(bench.levers);
    if (!process.argv.includes("--no-write")) {
      await writeFile(
        path.join(root, "bench/levers.json"),
        `${JSON.stringify({ machine: results.machine, rounds: settings.leverRounds, seconds: settings.leverSeconds, levers: bench.levers }, null, 2)}\n`,
      );
    }
  }
  if (results.figures.length === 0) {
    console.log("\nNo figure measured: bench/results.json and bench/report.html left as they were.");
  } else if (process.argv.includes("--no-write")) {
    console.log("\n--no-write: bench/results.json and bench/report.html left as they were.");
  } else {
    await writeFile(
      OUTPUT_JSON,
      `${JSON.stringify({ machine: results.machine, figures: results.figures }, null, 2)}\n`,
    );
    await writeFile(OUTPUT_HTML, renderReport(results));
    console.log(
      `\nWrote ${path.relative(process.cwd(), OUTPUT_JSON)} and ${path.relative(process.cwd(), OUTPUT_HTML)}`,
    );
  }
  console.log(`Run took ${results.machine.run_seconds} s.`);
  if (bench.errors.length > 0) {
    console.error(`\nThe harness failed in ${bench.errors.length} phase(s):\n${bench.errors.join("\n\n")}`);
    process.exitCode = 1;
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
