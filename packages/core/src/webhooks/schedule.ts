/** decisions.md: after a failed attempt, the next one after 5 s, 1 min, 5 min, 30 min, 2 h, 6 h, 12 h, 24 h. */
export const RETRY_SCHEDULE_MS = [5_000, 60_000, 300_000, 1_800_000, 7_200_000, 21_600_000, 43_200_000, 86_400_000];
/** The first attempt plus one per step of the schedule. */
export const MAX_WEBHOOK_ATTEMPTS = RETRY_SCHEDULE_MS.length + 1;
const JITTER = 0.2;
/**
 * graphile-worker's own attempts of one `deliver_webhook` job: they only count when the
 * task throws (the database out of reach), never for the endpoint's answers.
 */
export const MAX_WEBHOOK_JOB_ATTEMPTS = 5;

/**
 * The wait before attempt `attempt + 1`, or null when `attempt` was the last. Fast mode
 * (`PARLEY_WEBHOOK_FAST_RETRY=1`, tests and local development) turns each step into as
 * many seconds as it had minutes, at least 1 s; the code path is the same.
 */
export function nextRetryDelayMs(attempt: number, fast: boolean, random: () => number = Math.random): number | null {
  const base = RETRY_SCHEDULE_MS[attempt - 1];
  if (base === undefined) return null;
  const step = fast ? Math.max(1_000, base / 60) : base;
  return Math.round(step * (1 + random() * JITTER));
}

/** decisions.md: disabled after 25 consecutive failed events spread over at least 24 hours. */
export const DISABLE_AFTER_FAILED_EVENTS = 25;
export const DISABLE_AFTER_MS = 24 * 3_600_000;
