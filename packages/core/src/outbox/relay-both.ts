import { OUTBOX_WAKE_CHANNEL, type SqlClient } from "@parley/db";
import { eventRelay } from "./event-relay.js";
import { messageRelay } from "./message-relay.js";

/**
 * Both outboxes in one statement: a wake-up says that something committed, not which
 * outbox it wrote, and one round trip serves both. Returns the larger of the two counts,
 * so the loop goes on at once while either outbox had a full batch.
 */
export async function relayBothOnce(sql: SqlClient): Promise<number> {
  const [row] = await sql<{ relayed: number }[]>`
    with ${messageRelay(sql)}, ${eventRelay(sql)}
    select greatest((select count(*) from message_batch), (select count(*) from event_batch))::int as relayed,
           -- A SELECT expression runs only where the statement reads it: the jobs are added here.
           (select count(*) from message_jobs)::int as delivery_jobs,
           (select count(*) from event_jobs)::int as webhook_jobs`;
  return row?.relayed ?? 0;
}

/**
 * The CTE `relays_woken`: a wake-up of every relay (`parley_outbox_wake`), sent at commit,
 * when `waiting` (the CTE of a `relayNow` statement) found the outbox holding rows and the
 * statement wrote its own there: the write that asked to relay itself wakes nothing after
 * it (RequestRelay). Read by the statement's select, or it is not run.
 */
export function relaysWoken(client: SqlClient) {
  return client`
    relays_woken as (
      select pg_notify(${OUTBOX_WAKE_CHANNEL}, '') where (select outboxed from waiting)
    )`;
}

/**
 * The CTE `waiting`: whether `outbox` holds a row this transaction can see (rows written
 * before, not relayed yet, or its own). A `relayNow` statement that finds one writes its
 * rows behind it, where the relay keeps their order. The first row is taken from the
 * primary key's start, where the relay deletes: a scan of the table would walk its dead rows.
 */
export function outboxWaiting(client: SqlClient, outbox: "message_outbox" | "event_outbox") {
  return client`
    waiting as (
      select exists (select 1 from (select id from ${client(outbox)} order by id limit 1) as first) as outboxed
    )`;
}
