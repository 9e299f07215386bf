import type { Task } from "graphile-worker";

/**
 * Forgets what Parley only keeps for a while: idempotency keys after 24 hours, events and
 * webhook delivery records after `EVENT_RETENTION_DAYS` (30, as Stripe keeps events),
 * rate-limit windows once they are over, and uploaded files that expired without being sent
 * (a file a message uses is `retained` and stays). Runs from the crontab every few minutes.
 */
/**
 * Deletes the attachment rows `condition` selects. With an object store (`removesObjects`),
 * the same statement queues `remove_attachment_objects` with what it deleted: the objects
 * go once the rows are gone, and a crash in between cannot forget them.
 */
function deleteAttachments(condition: string, removesObjects: boolean): string {
  const deleted = `delete from attachments a where ${condition}`;
  if (!removesObjects) return deleted;
  return `
    with gone as (${deleted} returning a.id, a.organization_id, a.environment)
    select graphile_worker.add_job('remove_attachment_objects',
      json_build_object('attachments', json_agg(gone)), max_attempts => 25::smallint)
    from gone having count(*) > 0`;
}

export const cleanupExpired =
  (options: { eventRetentionDays: number; removesObjects?: boolean }): Task =>
  async (_payload, helpers) => {
    await helpers.query("delete from idempotency_keys where created_at < now() - interval '24 hours'");
    // Events are listed for as long (GET /events), so a receiver that was down can catch up.
    const retention = `${options.eventRetentionDays} days`;
    await helpers.query("delete from events where created_at < now() - $1::interval", [retention]);
    await helpers.query("delete from webhook_deliveries where created_at < now() - $1::interval", [retention]);
    await helpers.query("delete from rate_limit_windows where window_start < now() - interval '2 minutes'");
    // A send locks the attachment (FOR KEY SHARE) before retaining it, so a file is never
    // deleted under a message that is being stored.
    const removesObjects = options.removesObjects ?? false;
    await helpers.query(deleteAttachments("a.retained = false and a.expires_at < now()", removesObjects));
    // A file whose messages are all gone (their contact was deleted) is unused again. A
    // day past expiry no send or inbound message can still be taking it: both need an
    // unexpired upload.
    await helpers.query(
      deleteAttachments(
        `a.retained and a.expires_at < now() - interval '1 day'
        and not exists (select 1 from messages m where m.attachment_id = a.id)`,
        removesObjects,
      ),
    );
  };
