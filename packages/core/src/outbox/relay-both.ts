import type { SqlClient } from "@parley/db";
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
