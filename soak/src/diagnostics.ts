import { appendFile, readFile, writeFile } from "node:fs/promises";
import { monitorEventLoopDelay } from "node:perf_hooks";
import type postgres from "postgres";
import type { Recorder } from "./recorder.js";

/**
 * What the figures cannot say about a slow stretch, a line a second in
 * `logs/diagnostics.jsonl`: the queue's jobs by task, state and holder (with the age of the
 * oldest held one), the database's busy sessions by what they wait on, autovacuum and the
 * checkpointer at work, the machine's CPU split (iowait and steal included), each process's
 * CPU in that second (ticks of 1/100 s: 100 is a whole core) and the soak's
 * own event-loop delay (its receiver and simulators answer the workers). A backlog that
 * grows before a crash, or drains slowly after one, is explained here.
 */
export function startDiagnostics(
  sql: postgres.Sql,
  recorder: Recorder,
  file: string,
  processes: () => Record<string, number[]>,
): () => void {
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  let lastCpu: number[] | undefined;
  let lastTicks = new Map<string, number>();
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    void (async () => {
      const at = Math.round(recorder.now());
      const cpu = await cpuTimes();
      const cpuShare = lastCpu && cpu ? cpuSplit(lastCpu, cpu) : undefined;
      lastCpu = cpu;
      const ticks = await processTicks(processes());
      const processCpu = Object.fromEntries(
        [...ticks].flatMap(([name, value]) => {
          const before = lastTicks.get(name);
          return before === undefined ? [] : [[name, Math.max(0, value - before)]];
        }),
      );
      lastTicks = ticks;
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
      const line = { at, cpu: cpuShare, process_cpu: processCpu, loop, jobs, sessions };
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

/**
 * Each named group's CPU time in ticks (1/100 s): its processes' own and that of their
 * children that ended (PostgreSQL's backends come and go under the postmaster). A
 * restarted process counts from zero again: its second's delta is clamped to zero.
 */
async function processTicks(groups: Record<string, number[]>): Promise<Map<string, number>> {
  const ticks = new Map<string, number>();
  for (const [name, pids] of Object.entries(groups)) {
    let sum = 0;
    for (const pid of pids) {
      const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
      // The command may hold spaces: the fields count from the last ')'.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      // utime, stime, cutime, cstime
      sum += [11, 12, 13, 14].reduce((total, index) => total + Number(fields[index] ?? 0), 0);
    }
    ticks.set(name, sum);
  }
  return ticks;
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

/**
 * Starts pg_stat_statements' count afresh (the soak's own PostgreSQL loads it; another may
 * not have it: then there is nothing to write). A kill of PostgreSQL clears the counts: they
 * cover the time since its last restart.
 */
export async function resetStatementStats(sql: postgres.Sql): Promise<boolean> {
  try {
    await sql`create extension if not exists pg_stat_statements`;
    await sql`select pg_stat_statements_reset()`;
    return true;
  } catch {
    return false;
  }
}

/** The 40 statements that took PostgreSQL the most time, with their calls and mean time. */
export async function writeTopStatements(sql: postgres.Sql, file: string): Promise<void> {
  const statements = await sql`
    select calls, round(total_exec_time)::int as total_ms, round(mean_exec_time::numeric, 3)::float as mean_ms, rows,
           left(regexp_replace(query, '\\s+', ' ', 'g'), 400) as query
      from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
     order by total_exec_time desc limit 40`;
  await writeFile(file, `${JSON.stringify(statements, null, 1)}\n`);
}
