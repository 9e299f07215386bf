import { JOB_QUEUE_REVISION } from "@parley/core";
import type postgres from "postgres";
import { type InFlightEntry, InFlightList } from "./in-flight-list.js";

/** A write request in flight, as RequestRelay counts it. */
export interface WriteInFlight {
  /** Told by `now()` to add its own jobs: the relays need no wake-up for it. */
  relayedItself: boolean;
  /** Its place among the writes in flight, until `writeEnded`. */
  entry?: InFlightEntry<WriteInFlight>;
}

/**
 * How often a process that has not found the job queue's schema looks for it again (a
 * worker creates it as it starts). Every write until then takes the outbox, and the switch
 * to adding its own jobs costs PostgreSQL a moment (each backend's first `add_jobs`):
 * looked for every 5 s, an API started beside its worker switched 5 s into its traffic,
 * a stall of 0.3 to 0.8 s for every request then in flight (bench/notebook.md, "The
 * webhook latency's tail").
 */
export const QUEUE_CHECK_MS = 500;

/**
 * A process is quiet while fewer than QUIET_WRITES write requests began in the last
 * QUIET_WINDOW_MS: under 200 writes a second, which one-message jobs carry easily (a
 * worker runs 600 of them a second); above, the outbox's batches are what keeps up.
 */
export const QUIET_WRITES = 20;
export const QUIET_WINDOW_MS = 100;

export interface RequestRelayOptions {
  /** QUEUE_CHECK_MS unless told. */
  queueCheckMs?: number;
  /** The clock writes are timed by (milliseconds); `performance.now` unless told. */
  clock?: () => number;
}

/**
 * Decides when a write request adds its own delivery and webhook jobs, in its own
 * transaction (`relayNow` of insertSentMessage and recordEvents), rather than leaving
 * outbox rows for a worker's relay: while the process is quiet (QUIET_WRITES). A quiet
 * process saves the relay's hop (a pass of the relay, 2.5 to 3.5 ms on the benchmark's
 * machine, bench/notebook.md); a busy one keeps the outbox, whose passes put many
 * messages in one job. Either way the jobs exist exactly when the change commits, in the
 * order of the outbox (a write behind outbox rows it sees joins them): the choice moves
 * latency only.
 *
 * An API may start before any worker has created graphile-worker's schema: until it
 * exists, migrated to JOB_QUEUE_REVISION, every write uses the outbox, and the schema is
 * looked for every QUEUE_CHECK_MS.
 */
export class RequestRelay {
  /** The write requests in flight: each learns whether it relayed itself (not a Set: in-flight-list.ts says why). */
  #writes = new InFlightList<WriteInFlight>();
  /** When the last QUIET_WRITES writes began, a ring: `#begun[#next]` is the earliest. */
  #begun = new Float64Array(QUIET_WRITES).fill(Number.NEGATIVE_INFINITY);
  #next = 0;
  #queueReady = false;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  #reported = false;
  private readonly queueCheckMs: number;
  private readonly clock: () => number;

  constructor(options: RequestRelayOptions = {}) {
    this.queueCheckMs = options.queueCheckMs ?? QUEUE_CHECK_MS;
    this.clock = options.clock ?? (() => performance.now());
  }

  /** A write request began; `writeEnded` must follow once it is over, answered or not. */
  writeBegan(): WriteInFlight {
    this.#begun[this.#next] = this.clock();
    this.#next = (this.#next + 1) % QUIET_WRITES;
    const write: WriteInFlight = { relayedItself: false };
    write.entry = this.#writes.add(write);
    return write;
  }

  writeEnded(write: WriteInFlight): void {
    if (write.entry) this.#writes.remove(write.entry);
    write.entry = undefined;
  }

  /**
   * Whether the write asking (counted by `writeBegan`) adds its own jobs. A write told yes
   * records its outbox work by `relayNow` statements only, and those that fall back on
   * the outbox (behind a row they can see) wake the relays themselves, by a NOTIFY at
   * commit: so the one write in flight, told yes, is marked `relayedItself`, and its
   * answer wakes no relay. With several in flight the one asking is not known: none is
   * marked, and a no unmarks them all, so a write told no wakes the relays after it.
   */
  now(): boolean {
    const quiet = this.#queueReady && this.clock() - (this.#begun[this.#next] ?? 0) > QUIET_WINDOW_MS;
    if (!quiet) {
      this.#writes.forEach((write) => {
        write.relayedItself = false;
      });
      return false;
    }
    if (this.#writes.size === 1)
      this.#writes.forEach((write) => {
        write.relayedItself = true;
      });
    return true;
  }

  /**
   * Looks for the job queue now (its schema migrated to JOB_QUEUE_REVISION, its `add_jobs`
   * callable), and again every `queueCheckMs` until this process finds it. A schema this process's role may not use (an API given a role of
   * its own) is reported once to `onError`, and every write keeps the outbox.
   */
  async watchQueue(sql: postgres.Sql, onError: (error: unknown) => void): Promise<void> {
    try {
      this.#queueReady = await canAddJobs(sql);
    } catch (error) {
      if (!this.#reported) onError(error);
      this.#reported = true;
    }
    if (this.#queueReady || this.#closed) return;
    this.#timer = setTimeout(() => void this.watchQueue(sql, onError), this.queueCheckMs);
    this.#timer.unref();
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }
}

/**
 * Whether graphile-worker's schema is migrated to JOB_QUEUE_REVISION (at least) and this
 * connection's role may add jobs: `add_jobs` is called with no job in a transaction rolled
 * back (its NOTIFY is never sent). A schema still migrating is not ready: its first
 * `add_jobs` is dropped later, and a statement prepared against it would keep failing.
 */
async function canAddJobs(sql: postgres.Sql): Promise<boolean> {
  const [table] = await sql<{ present: boolean }[]>`
    select to_regclass('graphile_worker.migrations') is not null as present`;
  if (!table?.present) return false;
  const [schema] = await sql<{ revision: number }[]>`
    select coalesce(max(id), 0)::int as revision from graphile_worker.migrations`;
  if ((schema?.revision ?? 0) < JOB_QUEUE_REVISION) return false;
  await sql
    .begin(async (tx) => {
      await tx`select from graphile_worker.add_jobs(array[]::graphile_worker.job_spec[])`;
      throw new RolledBack();
    })
    .catch((error: unknown) => {
      if (!(error instanceof RolledBack)) throw error;
    });
  return true;
}

class RolledBack extends Error {}
