import type postgres from "postgres";

/** A write request in flight, as RequestRelay counts it. */
export interface WriteInFlight {
  /** Told by `now()` to add its own jobs: the relays need no wake-up for it. */
  relayedItself: boolean;
}

/** How often a process that has not found the job queue's schema looks for it again. */
export const QUEUE_CHECK_MS = 5_000;

/**
 * Decides when a write request adds its own delivery and webhook jobs, in its own
 * transaction (`relayNow` of insertSentMessage and recordEvents), rather than leaving
 * outbox rows for a worker's relay: when it is the only write request in flight in this
 * process. A quiet process saves the relay's hop (a pass of the relay, 2.5 to 3.5 ms on
 * the benchmark's machine, docs/operations.md); a busy one keeps the outbox, whose passes
 * put many messages in one job. Either way the jobs exist exactly when the change commits:
 * the choice moves latency only.
 *
 * An API may start before any worker has created graphile-worker's schema: until it
 * exists, every write uses the outbox, and the schema is looked for every QUEUE_CHECK_MS.
 */
export class RequestRelay {
  /** The write requests in flight: each learns whether it relayed itself. */
  #writes = new Set<WriteInFlight>();
  #queueReady = false;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  #reported = false;

  constructor(private readonly queueCheckMs = QUEUE_CHECK_MS) {}

  /** A write request began; `writeEnded` must follow once it is over, answered or not. */
  writeBegan(): WriteInFlight {
    const write = { relayedItself: false };
    this.#writes.add(write);
    return write;
  }

  writeEnded(write: WriteInFlight): void {
    this.#writes.delete(write);
  }

  /**
   * Whether the write asking (counted by `writeBegan`) adds its own jobs. Told yes, the
   * write is marked `relayedItself`, and its answer wakes no relay: a write so told
   * records its outbox work by `relayNow` statements only, and those that fall back on the
   * outbox (behind a row they can see) wake the relays themselves, by a NOTIFY at commit.
   */
  now(): boolean {
    if (!this.#queueReady || this.#writes.size > 1) return false;
    for (const write of this.#writes) write.relayedItself = true;
    return true;
  }

  /**
   * Looks for the job queue's `add_jobs` now, and again every `queueCheckMs` until this
   * process can call it. A schema this process's role may not use (an API given a role of
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
 * Whether graphile-worker's `add_jobs` exists and this connection's role may add jobs: it
 * is called with no job in a transaction rolled back (its NOTIFY is never sent).
 */
async function canAddJobs(sql: postgres.Sql): Promise<boolean> {
  const [row] = await sql<{ present: boolean }[]>`
    select to_regprocedure('graphile_worker.add_jobs(graphile_worker.job_spec[], boolean)') is not null as present`;
  if (!row?.present) return false;
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
