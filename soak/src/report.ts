import type { Account } from "./account.js";
import type { Crash, Sample } from "./recorder.js";
import type { MinuteRow, Target } from "./results.js";

/** What the report shows: the written results. */
export interface ReportInput {
  date: string;
  settings: Record<string, unknown>;
  machine: Record<string, unknown>;
  targets: Target[];
  account: Account;
  crashes: (Crash & { at_s: number })[];
  per_minute: MinuteRow[];
  rss_mb: Sample[];
  backlog: Sample[];
}

interface Series {
  name: string;
  points: [number, number][];
}

const WIDTH = 900;
const HEIGHT = 220;
const PAD = { left: 56, right: 150, top: 24, bottom: 28 };
const COLOURS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563"];
const CRASH_COLOURS: Record<Crash["kind"], string> = { api: "#f59e0b", worker: "#8b5cf6", postgres: "#ef4444" };

const escapeHtml = (text: string) =>
  text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c] ?? c);

/** A line chart over the run's seconds, with every crash drawn as a vertical line of its kind's colour. */
function chart(title: string, unit: string, series: Series[], crashes: ReportInput["crashes"], xMax: number): string {
  const yMax = Math.max(1, ...series.flatMap((line) => line.points.map(([, y]) => y))) * 1.1;
  const x = (seconds: number) => PAD.left + (seconds / Math.max(1, xMax)) * (WIDTH - PAD.left - PAD.right);
  const y = (value: number) => HEIGHT - PAD.bottom - (value / yMax) * (HEIGHT - PAD.top - PAD.bottom);
  const lines = series.map((line, index) => {
    const colour = COLOURS[index % COLOURS.length];
    const path = line.points
      .map(([px, py], i) => `${i === 0 ? "M" : "L"}${x(px).toFixed(1)},${y(py).toFixed(1)}`)
      .join("");
    const legendY = PAD.top + 14 * index;
    return (
      `<path d="${path}" fill="none" stroke="${colour}" stroke-width="1.5"/>` +
      `<text x="${WIDTH - PAD.right + 8}" y="${legendY + 4}" font-size="11" fill="${colour}">${escapeHtml(line.name)}</text>`
    );
  });
  const marks = crashes.map(
    (crash) =>
      `<line x1="${x(crash.at_s)}" x2="${x(crash.at_s)}" y1="${PAD.top}" y2="${HEIGHT - PAD.bottom}" stroke="${CRASH_COLOURS[crash.kind]}" stroke-dasharray="3,2"><title>${crash.target} killed at ${crash.at_s} s</title></line>`,
  );
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((share) => {
    const value = yMax * share;
    return `<text x="${PAD.left - 6}" y="${y(value) + 4}" font-size="10" text-anchor="end">${value >= 100 ? value.toFixed(0) : value.toFixed(1)}</text>`;
  });
  const xTicks = Array.from({ length: 7 }, (_, i) => (xMax * i) / 6).map(
    (seconds) =>
      `<text x="${x(seconds)}" y="${HEIGHT - 8}" font-size="10" text-anchor="middle">${xMax < 600 ? `${seconds.toFixed(0)} s` : `${(seconds / 60).toFixed(0)} min`}</text>`,
  );
  return `<figure><figcaption>${escapeHtml(title)} <small>(${escapeHtml(unit)})</small></figcaption>
<svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${escapeHtml(title)}">
<rect x="${PAD.left}" y="${PAD.top}" width="${WIDTH - PAD.left - PAD.right}" height="${HEIGHT - PAD.top - PAD.bottom}" fill="#fafafa" stroke="#ddd"/>
${ticks.join("")}${xTicks.join("")}${marks.join("")}${lines.join("")}
</svg></figure>`;
}

function samplesToSeries(samples: Sample[], names: string[]): Series[] {
  return names.map((name) => ({
    name,
    points: samples
      .filter((sample) => typeof sample.values[name] === "number")
      .map((sample) => [sample.at / 1000, sample.values[name] as number] as [number, number]),
  }));
}

function minuteSeries(rows: MinuteRow[], pick: (row: MinuteRow) => number | null, name: string): Series {
  return {
    name,
    points: rows
      .filter((row) => pick(row) !== null)
      .map((row) => [(row.minute - 0.5) * 60, pick(row) as number] as [number, number]),
  };
}

function table(rows: Record<string, unknown>[]): string {
  if (rows.length === 0) return "<p>none</p>";
  const keys = Object.keys(rows[0] as object);
  const head = keys.map((key) => `<th>${escapeHtml(key)}</th>`).join("");
  const body = rows
    .map((row) => `<tr>${keys.map((key) => `<td>${escapeHtml(String(row[key] ?? ""))}</td>`).join("")}</tr>`)
    .join("\n");
  return `<table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

/** The soak's report: one self-contained HTML page (no script), as the bench's. */
export function renderReport(input: ReportInput): string {
  const lastSample = Math.max(
    ...input.rss_mb.map((sample) => sample.at),
    ...input.backlog.map((sample) => sample.at),
    1,
  );
  const xMax = Math.max(lastSample / 1000, input.per_minute.length * 60);
  // The per-minute rows are counted from the start of the traffic; samples and crashes too.
  const rssNames = [...new Set(input.rss_mb.flatMap((sample) => Object.keys(sample.values)))];
  const account = input.account;
  const summary = [
    { what: "sends answered 201", count: account.sends.answered },
    { what: "sends never answered (out of retries)", count: account.sends.unanswered },
    { what: "sends lost", count: account.sends.lost.length },
    { what: "sends stored twice", count: account.sends.stored_twice.length },
    { what: "idempotency keys answering two messages", count: account.sends.idempotency_conflicts.length },
    { what: "sends failed (by the provider)", count: account.sends.failed.length },
    {
      what: "WhatsApp sends received by Meta once / twice or more",
      count: `${account.providers.meta.received_once} / ${account.providers.meta.duplicated}`,
    },
    {
      what: "email sends received by the relay once / twice or more",
      count: `${account.providers.smtp.received_once} / ${account.providers.smtp.duplicated}`,
    },
    {
      what: "events recorded / delivered / missing",
      count: `${account.events.recorded} / ${account.events.received} / ${account.events.missing.length}`,
    },
    { what: "duplicate webhook deliveries", count: account.events.duplicate_deliveries },
    { what: "webhook signatures that did not verify", count: account.events.bad_signatures.length },
    {
      what: "inbound WhatsApp accepted / stored once",
      count: `${account.inbound.meta.acknowledged} / ${account.inbound.meta.stored_once}`,
    },
    {
      what: "inbound email accepted / stored once",
      count: `${account.inbound.smtp.acknowledged} / ${account.inbound.smtp.stored_once}`,
    },
  ];
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Parley soak report</title>
<style>
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:960px;color:#111;padding:0 1rem}
table{border-collapse:collapse;margin:1rem 0;font-size:13px}td,th{border:1px solid #ddd;padding:4px 8px;text-align:left}
figure{margin:1.5rem 0}figcaption{font-weight:600;margin-bottom:.25rem}svg{width:100%;height:auto}
.ok{color:#15803d}.bad{color:#b91c1c}.legend span{margin-right:1rem}
</style></head><body>
<h1>Parley soak report</h1>
<p>${escapeHtml(input.date)}: ${escapeHtml(JSON.stringify(input.settings))}<br>${escapeHtml(JSON.stringify(input.machine))}</p>
<h2 class="${account.ok ? "ok" : "bad"}">${account.ok ? "The account: nothing lost" : "The account: LOSSES"}</h2>
${account.failures.map((failure) => `<p class="bad">${escapeHtml(failure)}</p>`).join("")}
${table(summary)}
<h2>Targets</h2>
${table(input.targets.map((target) => ({ figure: target.figure, value: target.value, target: target.target, met: target.met ? "yes" : "no" })))}
<p class="legend">Crashes: <span style="color:${CRASH_COLOURS.api}">API (dashed)</span><span style="color:${CRASH_COLOURS.worker}">worker</span><span style="color:${CRASH_COLOURS.postgres}">PostgreSQL</span></p>
${chart("Requests per second", "per minute", [minuteSeries(input.per_minute, (row) => row.requests_per_s, "requests/s")], input.crashes, xMax)}
${chart("Send latency", "ms, per minute", [minuteSeries(input.per_minute, (row) => row.send_p50_ms, "p50"), minuteSeries(input.per_minute, (row) => row.send_p99_ms, "p99"), minuteSeries(input.per_minute, (row) => row.all_p99_ms, "p99, all requests")], input.crashes, xMax)}
${chart("Client errors", "per minute", [minuteSeries(input.per_minute, (row) => row.failed_attempts, "attempts 5xx / network"), minuteSeries(input.per_minute, (row) => row.failed_operations, "operations failed")], input.crashes, xMax)}
${chart("Memory (RSS)", "MB, every 5 s", samplesToSeries(input.rss_mb, rssNames), input.crashes, xMax)}
${chart("Backlogs", "rows, every 2 s", samplesToSeries(input.backlog, ["messages", "events", "jobs", "jobs_locked", "jobs_waiting"]), input.crashes, xMax)}
<h2>Crashes</h2>
${table(input.crashes.map((crash) => ({ at_s: crash.at_s, kind: crash.kind, target: crash.target, pid: crash.pid, restart_s: crash.restartedInMs === undefined ? "" : (crash.restartedInMs / 1000).toFixed(1), backlog_recovered_s: crash.backlogRecoveredS ?? "never" })))}
<h2>Per minute</h2>
${table(input.per_minute.map((row) => ({ ...row, crashes: row.crashes.join(" ") })))}
</body></html>
`;
}
