/**
 * The revision of graphile-worker's schema (the last id of `graphile_worker.migrations`)
 * that the worker's pinned graphile-worker installs, one transaction per migration. A
 * process that adds jobs by itself (an API relaying its own requests) waits for it: in
 * the middle of the migration `add_jobs` is there but later dropped and made again
 * (migration 16), and a statement prepared against the first one fails on every call
 * after ("cache lookup failed for function"). A test holds it to the installed version.
 */
export const JOB_QUEUE_REVISION = 19;
