import { appendFile, readFile } from "node:fs/promises";
import { monitorEventLoopDelay } from "node:perf_hooks";
import type postgres from "postgres";
import type { Recorder } from "./recorder.js";

/**
 * What the figures cannot say about a slow stretch, a line a second in
 * `logs/diagnostics.jsonl`: the queue's jobs by task, state and holder (with the age of the
 * oldest held one), the database's busy sessions by what they wait on, autovacuum and the
 * checkpointer at work, the machine's CPU split (iowait and steal included) and the soak's
 * own event-loop delay (its receiver and simulators answer the workers). A backlog that
 * grows before a crash, or drains slowly after one, is explained here.
 */
export function startDiagnostics(sql: postgres.Sql, recorder: Recorder, file: string): () => void {
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  let lastCpu: number[] | undefined;
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    void (async () => {
      const at = Math.round(recorder.now());
      const cpu = await cpuTimes();
      const cpuShare = lastCpu && cpu ? cpuSplit(lastCpu, cpu) : undefined;
      lastCpu = cpu;
      const loop = { p99_ms: loopDelay.percentile(99) / 1e6, max_ms: loopDelay.max / 1e6 };
      loopDelay.reset();
      const [jobs, sessions] = await Promise.all([
        sql`
          select task_identifier as task,
                 case when locked_at is not null then 'held' when run_at > now() then 'later' else 'ready' end as state,
                 right(locked_by, 6) as holder, count(*)::int as n,
                 round(max(extract(epoch from now() - locked_at))::numeric, 2)::float as oldest_s
            from graphile_worker.jobs where attempts < max_attempts
           group by 1, 2, 3`.catch(() => null),
        sql`
          select backend_type as type, coalesce(wait_event_type, 'cpu') as waits, wait_event as event,
                 count(*)::int as n, max(left(query, 60)) filter (where backend_type = 'autovacuum worker') as query
            from pg_stat_activity
           where pid <> pg_backend_pid() and (state = 'active' or backend_type in ('autovacuum worker', 'checkpointer'))
           group by 1, 2, 3`.catch(() => null),
      ]);
      const line = { at, cpu: cpuShare, loop, jobs, sessions };
      await appendFile(file, `${JSON.stringify(line)}\n`);
    })()
      .catch(() => {})
      .finally(() => {
        busy = false;
      });
  }, 1_000);
  return () => {
    clearInterval(timer);
    loopDelay.disable();
  };
}

/** The machine's CPU times since boot (user, nice, system, idle, iowait, irq, softirq, steal), in ticks. */
async function cpuTimes(): Promise<number[] | undefined> {
  const stat = await readFile("/proc/stat", "utf8").catch(() => "");
  const line = stat.split("\n").find((row) => row.startsWith("cpu "));
  return line?.trim().split(/\s+/).slice(1, 9).map(Number);
}

function cpuSplit(before: number[], after: number[]): Record<string, number> {
  const delta = after.map((value, index) => value - (before[index] ?? 0));
  const total = delta.reduce((sum, value) => sum + value, 0) || 1;
  const share = (ticks: number) => Math.round((ticks / total) * 100);
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = delta;
  return {
    user: share(user + nice),
    system: share(system + irq + softirq),
    idle: share(idle),
    iowait: share(iowait),
    steal: share(steal),
  };
}
