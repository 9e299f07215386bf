import postgres from "postgres";

/** The channel on which API processes tell the workers' outbox relays that rows are waiting. */
export const OUTBOX_WAKE_CHANNEL = "parley_outbox_wake";

export interface OutboxWaker {
  /** After a change committed: relays in other processes look at their outboxes now. */
  wake(): void;
  close(): Promise<void>;
}

/**
 * The least time between two wake-ups of one process. A relay gathers rows for 2 ms or
 * more after a pass anyway: a NOTIFY per commit (one in flight at a time, about one a
 * send at 1,000 sends/s) cost every send a statement in the API and a transaction in
 * PostgreSQL, and woke the relays for nothing.
 */
export const WAKE_INTERVAL_MS = 5;

/**
 * Wakes the outbox relays of every worker process with a NOTIFY of its own, sent after
 * the change committed: never inside the change's transaction, where it would serialise
 * the commits of every send (graphile-worker's NOTIFY per job does). The first change
 * after a quiet moment wakes them at once; the changes that follow within
 * WAKE_INTERVAL_MS share one NOTIFY at its end (at most one in flight), so a change waits
 * at most that long for its wake-up and a busy process sends about 200 a second. A
 * wake-up lost (the database restarting) only means the relays find the rows at their
 * next poll.
 *
 * Its own connection, with synchronous_commit off: a NOTIFY commits a transaction, and a
 * wake-up is not worth a disk flush.
 */
export function createOutboxWaker(url: string, onError: (error: unknown) => void): OutboxWaker {
  const sql = postgres(url, {
    max: 1,
    onnotice: () => {},
    connection: { application_name: "parley-outbox-wake", synchronous_commit: "off" },
  });
  let inFlight: Promise<unknown> | undefined;
  let pending = false;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let lastSentAt = Number.NEGATIVE_INFINITY;
  const send = () => {
    pending = false;
    lastSentAt = performance.now();
    inFlight = sql`select pg_notify(${OUTBOX_WAKE_CHANNEL}, '')`.catch(onError).finally(() => {
      inFlight = undefined;
      if (pending && !closed) flush();
    });
  };
  const flush = () => {
    timer = undefined;
    if (inFlight || closed) return;
    const wait = lastSentAt + WAKE_INTERVAL_MS - performance.now();
    if (wait > 0) timer = setTimeout(flush, wait);
    else send();
  };
  return {
    wake() {
      pending = true;
      if (!inFlight && !timer) flush();
    },
    async close() {
      if (closed) return;
      closed = true;
      clearTimeout(timer);
      // The last changes' wake-up, rather than leave their rows to the relays' poll.
      await inFlight;
      if (pending) send();
      await inFlight;
      await sql.end({ timeout: 2 });
    },
  };
}
