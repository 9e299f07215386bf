import type { Task } from "graphile-worker";

/**
 * Forgets what the API only keeps for a while: idempotency keys after 24 hours and
 * rate-limit windows once they are over. Runs from the crontab every few minutes.
 */
export const cleanupExpired: Task = async (_payload, helpers) => {
  await helpers.query("delete from idempotency_keys where created_at < now() - interval '24 hours'");
  await helpers.query("delete from rate_limit_windows where window_start < now() - interval '2 minutes'");
};
