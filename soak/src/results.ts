import type { Account } from "./account.js";
import { type Crash, percentile, type Recorder, round, type Sample } from "./recorder.js";

export interface Target {
  figure: string;
  value: number | string | null;
  target: string;
  met: boolean;
}

export interface MinuteRow {
  minute: number;
  requests_per_s: number;
  send_p50_ms: number | null;
  send_p99_ms: number | null;
  all_p99_ms: number | null;
  /** Attempts answered 5xx or failed on the network (retried by the client). */
  failed_attempts: number;
  /** Operations that failed for good (out of retries, or refused). */
  failed_operations: number;
  crashes: string[];
}

export interface Figures {
  targets: Target[];
  perMinute: MinuteRow[];
}

/** A crash's window: from the kill until 30 s after the process (or PostgreSQL) was back. */
const WINDOW_AFTER_MS = 30_000;
const WINDOW_BEFORE_MS = 1_000;

interface Span {
  start: number;
  end: number;
  /** The processes that ran from start to end without a restart (their memory over the run counts). */
  longLived: string[];
  /** The processes that ended without being killed or stopped (a crash of ours): "worker-2 (pid 123): 1". */
  exitedOnTheirOwn: string[];
}

/** The run's figures beside the issue's targets (never pass/fail on timing: the account alone fails a run). */
export function figuresOf(recorder: Recorder, account: Account, span: Span): Figures {
  for (const crash of recorder.crashes) crash.backlogRecoveredS = backlogRecovery(recorder, crash);
  return { targets: targets(recorder, account, span), perMinute: perMinute(recorder, span) };
}

function inCrashWindow(at: number, crashes: Crash[]): boolean {
  return crashes.some(
    (crash) => at >= crash.at - WINDOW_BEFORE_MS && at <= crash.at + (crash.restartedInMs ?? 2_000) + WINDOW_AFTER_MS,
  );
}

/** The first part of the run, the reference for latency and memory: ten minutes, or a third of a shorter run. */
function referenceEnd(span: Span): number {
  return span.start + Math.min(10 * 60_000, (span.end - span.start) / 3);
}

function targets(recorder: Recorder, account: Account, span: Span): Target[] {
  const lost =
    account.sends.lost.length +
    account.providers.meta.missing.length +
    account.providers.smtp.missing.length +
    account.events.missing.length +
    account.inbound.meta.missing.length +
    account.inbound.smtp.missing.length;
  const perCrash = account.providers.duplicates_per_crash.map((crash) => crash.duplicates);
  const worstPerCrash = Math.max(0, ...perCrash);
  const duplicates = perCrash.reduce((sum, count) => sum + count, 0) + account.providers.duplicates_outside_crashes;

  const reference = referenceEnd(span);
  const sendLatencies = (from: number, to: number) =>
    recorder.operations
      .filter(
        (op) => op.kind === "send" && op.ok && op.at >= from && op.at < to && !inCrashWindow(op.at, recorder.crashes),
      )
      .map((op) => op.ms)
      .sort((a, b) => a - b);
  const firstP99 = percentile(sendLatencies(span.start, reference), 99);
  const restP99 = percentile(sendLatencies(reference, span.end), 99);
  const p99Ratio = firstP99 && restP99 ? restP99 / firstP99 : null;

  const drifts = rssDrifts(recorder, span.longLived, reference, span.end);
  const worstDrift = drifts.length ? Math.max(...drifts.map((drift) => Math.abs(drift.drift))) : null;
  const recoveries = recorder.crashes.map((crash) => crash.backlogRecoveredS);
  const worstRecovery = recoveries.some((value) => value === null || value === undefined)
    ? null
    : Math.max(0, ...(recoveries as number[]));

  const errorsOutside = recorder.failedAttempts.filter((attempt) => !inCrashWindow(attempt.at, recorder.crashes));
  return [
    { figure: "lost (sends, provider sends, events, inbound)", value: lost, target: "0", met: lost === 0 },
    {
      figure: "processes that exited on their own (not killed)",
      value: span.exitedOnTheirOwn.length ? span.exitedOnTheirOwn.join(", ") : 0,
      target: "0",
      met: span.exitedOnTheirOwn.length === 0,
    },
    {
      figure: "client errors (5xx, network) outside crash windows",
      value: `${errorsOutside.length} (${recorder.failedAttempts.length} in all)`,
      target: "0",
      met: errorsOutside.length === 0,
    },
    {
      figure: "duplicate provider sends: the most at one crash",
      value: `${worstPerCrash} (${duplicates} in all, ${recorder.crashes.length} crashes)`,
      target: "<= 1 per crash",
      met: worstPerCrash <= 1 && account.providers.duplicates_outside_crashes === 0,
    },
    {
      figure: "send p99 outside crash windows: rest of the run / first part",
      value: p99Ratio === null ? null : `${round(p99Ratio, 2)}x (${round(restP99)} / ${round(firstP99)} ms)`,
      target: "<= 1.5x",
      met: p99Ratio !== null && p99Ratio <= 1.5,
    },
    {
      figure: "RSS drift of the long-lived processes (worst)",
      value:
        worstDrift === null
          ? null
          : `${round(worstDrift * 100)} % (${drifts.map((d) => `${d.name} ${round(d.drift * 100)} %`).join(", ")})`,
      target: "< 10 %",
      met: worstDrift !== null && worstDrift < 0.1,
    },
    {
      figure: "backlogs back to their level before a crash (worst)",
      value: worstRecovery === null ? "not recovered" : `${round(worstRecovery)} s`,
      target: "<= 30 s",
      met: worstRecovery !== null && worstRecovery <= 30,
    },
  ];
}

/** The memory of each process that lived the whole run: from the reference minute to the last. */
function rssDrifts(
  recorder: Recorder,
  longLived: string[],
  reference: number,
  end: number,
): { name: string; drift: number }[] {
  const result: { name: string; drift: number }[] = [];
  for (const name of longLived) {
    const at = (from: number, to: number) => mean(recorder.rss, name, from, to);
    const start = at(reference, reference + 60_000);
    const last = at(end - 60_000, end);
    if (start === null || last === null) continue;
    result.push({ name, drift: (last - start) / start });
  }
  return result;
}

function mean(samples: Sample[], name: string, from: number, to: number): number | null {
  const values = samples
    .filter((sample) => sample.at >= from && sample.at <= to)
    .map((sample) => sample.values[name])
    .filter((value): value is number => typeof value === "number");
  return values.length ? values.reduce((sum, value) => sum + value, 0) / values.length : null;
}

/**
 * Seconds from the restart (PostgreSQL accepting connections again; a killed process is
 * counted from its kill, its supervisor restarting it a second later) until the backlogs
 * (outboxes and jobs together) were back to their level before the crash: the most of the
 * 10 s before, and at least 20 rows (steady traffic keeps a few in hand). Null when they
 * never were.
 */
function backlogRecovery(recorder: Recorder, crash: Crash): number | null {
  const total = (sample: Sample) =>
    sample.values.messages === null
      ? null
      : Number(sample.values.messages) + Number(sample.values.events) + Number(sample.values.jobs);
  const before = recorder.backlog
    .filter((sample) => sample.at >= crash.at - 10_000 && sample.at < crash.at)
    .map(total)
    .filter((value): value is number => value !== null);
  const level = Math.max(20, ...before);
  const back = crash.at + (crash.restartedInMs ?? 0);
  const recovered = recorder.backlog.find((sample) => {
    const value = total(sample);
    return sample.at > back && value !== null && value <= level;
  });
  return recovered ? (recovered.at - back) / 1000 : null;
}

function perMinute(recorder: Recorder, span: Span): MinuteRow[] {
  const rows: MinuteRow[] = [];
  // The last minute takes the few seconds past the whole minutes: no row of a second or two.
  const minutes = Math.max(1, Math.round((span.end - span.start) / 60_000));
  for (let minute = 0; minute < minutes; minute++) {
    const from = span.start + minute * 60_000;
    const to = minute === minutes - 1 ? span.end : from + 60_000;
    const ops = recorder.operations.filter((op) => op.at >= from && op.at < to);
    const sends = ops
      .filter((op) => op.kind === "send" && op.ok)
      .map((op) => op.ms)
      .sort((a, b) => a - b);
    const all = ops
      .filter((op) => op.ok)
      .map((op) => op.ms)
      .sort((a, b) => a - b);
    rows.push({
      minute: minute + 1,
      requests_per_s: round(ops.length / ((to - from) / 1000)) ?? 0,
      send_p50_ms: round(percentile(sends, 50)),
      send_p99_ms: round(percentile(sends, 99)),
      all_p99_ms: round(percentile(all, 99)),
      failed_attempts: recorder.failedAttempts.filter((attempt) => attempt.at >= from && attempt.at < to).length,
      failed_operations: ops.filter((op) => !op.ok).length,
      crashes: recorder.crashes.filter((crash) => crash.at >= from && crash.at < to).map((crash) => crash.target),
    });
  }
  return rows;
}
