import postgres from "postgres";

/** The channel on which API processes tell the workers' outbox relays that rows are waiting. */
export const OUTBOX_WAKE_CHANNEL = "parley_outbox_wake";

export interface OutboxWaker {
  /** After a change committed: relays in other processes look at their outboxes now. */
  wake(): void;
  close(): Promise<void>;
}

/**
 * Wakes the outbox relays of every worker process with a NOTIFY of its own, sent after
 * the change committed: never inside the change's transaction, where it would serialise
 * the commits of every send (graphile-worker's NOTIFY per job does). At most one is in
 * flight per process; the changes committed meanwhile share the next one, so under load
 * the wake-ups cost a handful of statements a second. A wake-up lost (the database
 * restarting) only means the relays find the rows at their next poll.
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
  let inFlight = false;
  let pending = false;
  const send = () => {
    inFlight = true;
    pending = false;
    sql`select pg_notify(${OUTBOX_WAKE_CHANNEL}, '')`.catch(onError).finally(() => {
      inFlight = false;
      if (pending) send();
    });
  };
  return {
    wake() {
      if (inFlight) pending = true;
      else send();
    },
    close: () => sql.end({ timeout: 2 }),
  };
}
