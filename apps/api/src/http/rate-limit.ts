import { postgresClientOf, type Queryable } from "@parley/db";
import type { RequestHandler, Response } from "express";
import { ApiError } from "./api-error.js";

const WINDOW_MS = 60_000;

export interface RateLimitWindow {
  start: Date;
  resetSeconds: number;
}

/** The fixed one-minute window `now` falls in. */
export function currentWindow(now = Date.now()): RateLimitWindow {
  return windowOf(now);
}

function windowOf(now: number): RateLimitWindow {
  const start = now - (now % WINDOW_MS);
  return { start: new Date(start), resetSeconds: Math.ceil((start + WINDOW_MS) / 1000) };
}

export function setRateLimitHeaders(res: Response, limit: number, remaining: number, resetSeconds: number) {
  res.setHeader("X-RateLimit-Limit", String(limit));
  res.setHeader("X-RateLimit-Remaining", String(Math.max(0, remaining)));
  res.setHeader("X-RateLimit-Reset", String(resetSeconds));
}

/**
 * Sets the headers of a request not (yet) counted against an organization: every response
 * carries them, even a 401 or 404, with the full allowance of the current window.
 */
export function setDefaultRateLimitHeaders(res: Response, limit: number): void {
  setRateLimitHeaders(res, limit, limit, windowOf(Date.now()).resetSeconds);
}

/**
 * Fixed one-minute windows per organization, counted in this process and added to
 * PostgreSQL's count every few milliseconds (RateLimitCounter), so every API process
 * shares the same allowance: sets the request's headers from its `count` in `window`, and
 * refuses it past `limit`. Called by `authenticate` once the request is counted.
 */
export function enforceRateLimit(res: Response, limit: number, count: number, window: RateLimitWindow): void {
  setRateLimitHeaders(res, limit, limit - count, window.resetSeconds);
  if (count > limit) throw rateLimited(`${limit} requests per minute`, window);
}

/** 429 `rate_limited` with `Retry-After`: the seconds left in `window`. */
export function rateLimited(allowance: string, window: RateLimitWindow, now = Date.now()): ApiError {
  const retryAfter = Math.max(1, window.resetSeconds - Math.floor(now / 1000));
  return new ApiError("rate_limited", `Rate limit of ${allowance} exceeded; retry after ${retryAfter} s.`, {
    headers: { "Retry-After": String(retryAfter) },
  });
}

/** Requests to add to a bucket's count in the window starting at `windowStartMs`. */
interface WindowCount {
  bucket: string;
  windowStartMs: number;
  added: number;
}

/**
 * Adds counts to `rate_limit_windows`, in one statement, and returns each bucket's count
 * there afterwards (every process's requests), keyed by `windowCountKey`. Its
 * `organization_id` holds an organization's id, or a bucket name such as
 * `webchat:message:address:203.0.113.7`, which no organization id can be.
 */
async function addToWindows(db: Queryable, counts: readonly WindowCount[]): Promise<Map<string, number>> {
  const rows = await postgresClientOf(db)<{ bucket: string; start_ms: string; count: number }[]>`
    insert into rate_limit_windows (organization_id, window_start, count)
    select bucket, to_timestamp(start_ms / 1000.0), added
    from unnest(${counts.map((count) => count.bucket)}::text[], ${counts.map((count) => count.windowStartMs)}::bigint[],
                ${counts.map((count) => count.added)}::int[]) as counts(bucket, start_ms, added)
    on conflict (organization_id, window_start) do update set count = rate_limit_windows.count + excluded.count
    returning organization_id as bucket, (extract(epoch from window_start) * 1000)::bigint::text as start_ms, count`;
  return new Map(rows.map((row) => [windowCountKey(row.bucket, Number(row.start_ms)), Number(row.count)]));
}

function windowCountKey(bucket: string, windowStartMs: number): string {
  return `${windowStartMs}:${bucket}`;
}

/**
 * Counts one request against each bucket in the current window, in one statement, in the
 * same `rate_limit_windows` as the organizations' allowance. Returns the counts in the
 * order of `buckets`.
 */
export async function countRequests(db: Queryable, buckets: readonly string[], window: RateLimitWindow) {
  const windowStartMs = window.start.getTime();
  const counts = await addToWindows(
    db,
    buckets.map((bucket) => ({ bucket, windowStartMs, added: 1 })),
  );
  return buckets.map((bucket) => counts.get(windowCountKey(bucket, windowStartMs)) ?? 0);
}

export interface RateLimitCounterOptions {
  /** `RATE_LIMIT_FLUSH_MS`: how long a count waits in the process before it is added to PostgreSQL's. */
  flushMs: number;
  /**
   * `RATE_LIMIT_FLUSH_BATCH`: the most requests of one bucket this process counts that
   * PostgreSQL has not confirmed; a request beyond it waits for the flush.
   */
  flushBatch: number;
}

interface BucketCount {
  bucket: string;
  windowStart: number;
  /** The bucket's count in PostgreSQL when this process last added to it (every process's requests). */
  shared: number;
  /** Counted here and being added to PostgreSQL's count. */
  inFlight: number;
  /** Counted here since. */
  pending: number;
}

/**
 * Rate-limit counts aggregated in the process: a request is numbered at once from the
 * bucket's last known shared count plus this process's requests since, and the counts
 * are added to `rate_limit_windows` in one statement for every bucket every `flushMs` (or
 * as soon as a bucket has half of `flushBatch` requests counted here), instead of a statement per
 * request. Each flush brings back the shared counts, other processes' requests included.
 *
 * The bound: within one process the numbering is exact (a single process never admits
 * more than the limit). Another process's requests are seen at the next flush, and a
 * process never holds more than `flushBatch` requests of a bucket that PostgreSQL has not
 * counted; once a flush shows the allowance spent, the process admits nothing more in that
 * window. So with P processes a window admits at most the limit plus P x `flushBatch`
 * requests of one organization (in practice far fewer: what arrives in one flush interval).
 */
export class RateLimitCounter {
  private readonly counts = new Map<string, BucketCount>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly db: Queryable,
    private readonly options: RateLimitCounterOptions,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  /** Counts one request in the bucket's window; gives its number there, every process's requests included. */
  async count(bucket: string, window: RateLimitWindow): Promise<number> {
    for (;;) {
      const number = this.countNow(bucket, window);
      if (number !== undefined) return number;
      await this.flush();
    }
  }

  /**
   * `count` without waiting: undefined, and nothing counted, when this process already
   * holds `flushBatch` requests of the bucket that PostgreSQL has not counted (`count`
   * then waits for the flush).
   */
  countNow(bucket: string, window: RateLimitWindow): number | undefined {
    const count = this.countOf(bucket, window);
    if (count.pending + count.inFlight >= this.options.flushBatch) return undefined;
    count.pending++;
    // Half the batch counted here: added now rather than at the timer, so a busy process
    // seldom reaches the batch and makes a request wait for a flush.
    if (count.pending >= this.options.flushBatch / 2 && !this.flushing) this.flush().catch(this.onError);
    else this.schedule();
    return count.shared + count.inFlight + count.pending;
  }

  /** Adds every count not yet added to PostgreSQL's; after a flush in progress, when there is one. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing.then(() => this.flush());
    if (![...this.counts.values()].some((count) => count.pending > 0)) return Promise.resolve();
    this.flushing = this.write().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  /** At shutdown: the last counts reach PostgreSQL. */
  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  private countOf(bucket: string, window: RateLimitWindow): BucketCount {
    const windowStart = window.start.getTime();
    const key = windowCountKey(bucket, windowStart);
    let count = this.counts.get(key);
    if (!count) {
      count = { bucket, windowStart, shared: 0, inFlight: 0, pending: 0 };
      this.counts.set(key, count);
    }
    return count;
  }

  private schedule() {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush().catch(this.onError);
    }, this.options.flushMs);
    this.timer.unref();
  }

  private async write(): Promise<void> {
    const batch = [...this.counts.values()].filter((count) => count.pending > 0);
    for (const count of batch) {
      count.inFlight = count.pending;
      count.pending = 0;
    }
    try {
      const shared = await addToWindows(
        this.db,
        batch.map((count) => ({ bucket: count.bucket, windowStartMs: count.windowStart, added: count.inFlight })),
      );
      for (const count of batch) {
        count.shared = shared.get(windowCountKey(count.bucket, count.windowStart)) ?? count.shared + count.inFlight;
        count.inFlight = 0;
      }
    } catch (error) {
      for (const count of batch) {
        count.pending += count.inFlight;
        count.inFlight = 0;
      }
      throw error;
    } finally {
      this.forgetPastWindows();
      if ([...this.counts.values()].some((count) => count.pending > 0)) this.schedule();
    }
  }

  /** Counts of windows that ended, all added: nothing will ask for them again. */
  private forgetPastWindows() {
    const current = currentWindow().start.getTime();
    for (const [key, count] of this.counts) {
      if (count.windowStart < current && count.pending === 0 && count.inFlight === 0) this.counts.delete(key);
    }
  }
}

/**
 * For keyless routes, before anything else is read: fixed one-minute windows per source
 * address (the connecting socket's: `trust proxy` is off), counted in the same shared
 * table as the organizations' allowances under the bucket `<scope>:<address>`, and answered
 * with the same 429 and headers.
 */
export function sourceRateLimit(db: Queryable, scope: string, limit: number): RequestHandler {
  return async (req, res, next) => {
    const now = Date.now();
    const window = windowOf(now);
    const [count = 1] = await countRequests(db, [`${scope}:${req.socket.remoteAddress ?? "unknown"}`], window);
    setRateLimitHeaders(res, limit, limit - count, window.resetSeconds);
    if (count > limit) throw rateLimited(`${limit} requests per minute`, window, now);
    next();
  };
}
