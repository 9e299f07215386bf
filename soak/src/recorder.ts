/** Everything the soak observes as it runs, on one clock: milliseconds since the traffic started. */

export type OperationKind =
  | "send"
  | "contact_create"
  | "contact_update"
  | "page"
  | "upload"
  | "inbound_meta"
  | "inbound_smtp";

export interface Operation {
  kind: OperationKind;
  at: number;
  ms: number;
  ok: boolean;
}

export interface Crash {
  at: number;
  kind: "api" | "worker" | "postgres";
  target: string;
  pid: number;
  /** PostgreSQL: how long its restart took (the orphaned backends must go first). */
  restartedInMs?: number;
  /** Seconds from the restart (PostgreSQL's; a process's kill) until the backlogs were back to their level before the crash. */
  backlogRecoveredS?: number | null;
}

export interface Sample {
  at: number;
  values: Record<string, number | null>;
}

export class Recorder {
  /** Set again when the traffic starts: every time in the results counts from there. */
  private started = performance.now();
  readonly operations: Operation[] = [];
  /** Attempts answered 5xx or failed on the network (the SDK retried them), with their time. */
  readonly failedAttempts: { at: number; what: string }[] = [];
  readonly crashes: Crash[] = [];
  readonly rss: Sample[] = [];
  readonly backlog: Sample[] = [];
  readonly notes: string[] = [];

  startClock(): void {
    this.started = performance.now();
  }

  now(): number {
    return performance.now() - this.started;
  }

  operation(kind: OperationKind, at: number, ok: boolean): void {
    this.operations.push({ kind, at, ms: this.now() - at, ok });
  }

  failedAttempt(what: string): void {
    this.failedAttempts.push({ at: this.now(), what });
  }

  note(line: string): void {
    const stamp = `${(this.now() / 1000).toFixed(1).padStart(7)} s`;
    this.notes.push(`${stamp} ${line}`);
    console.log(`[soak ${stamp}] ${line}`);
  }
}

export function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? null;
}

export const round = (value: number | null | undefined, digits = 1): number | null =>
  value === null || value === undefined || !Number.isFinite(value) ? null : Number(value.toFixed(digits));
