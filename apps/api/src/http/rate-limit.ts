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
 * Before authentication: every response carries the headers, even a 401 or 404.
 * A request with no organization yet reports the full allowance of the current window.
 */
export function defaultRateLimitHeaders(limit: number): RequestHandler {
  return (_req, res, next) => {
    const window = windowOf(Date.now());
    setRateLimitHeaders(res, limit, limit, window.resetSeconds);
    next();
  };
}

/**
 * Fixed one-minute windows per organization, counted in PostgreSQL so every API
 * process shares the same allowance.
 */
export function rateLimit(limit: number): RequestHandler {
  return (req, res, next) => {
    if (!req.auth || !req.rateLimitCount) return next();
    const now = Date.now();
    const { count, window } = req.rateLimitCount;
    setRateLimitHeaders(res, limit, limit - count, window.resetSeconds);
    if (count > limit) throw rateLimited(`${limit} requests per minute`, window, now);
    next();
  };
}

/** 429 `rate_limited` with `Retry-After`: the seconds left in `window`. */
export function rateLimited(allowance: string, window: RateLimitWindow, now = Date.now()): ApiError {
  const retryAfter = Math.max(1, window.resetSeconds - Math.floor(now / 1000));
  return new ApiError("rate_limited", `Rate limit of ${allowance} exceeded; retry after ${retryAfter} s.`, {
    headers: { "Retry-After": String(retryAfter) },
  });
}

/**
 * Counts one request against each bucket in the current window, in one statement, in the
 * same `rate_limit_windows` as the organizations' allowance (its `organization_id` then
 * holds a bucket name such as `webchat:message:address:203.0.113.7`, which no organization
 * id can be). Returns the counts in the order of `buckets`.
 */
export async function countRequests(db: Queryable, buckets: readonly string[], window: RateLimitWindow) {
  const rows = await postgresClientOf(db)<{ bucket: string; count: number }[]>`
    insert into rate_limit_windows (organization_id, window_start, count)
    select bucket, ${window.start.toISOString()}::timestamptz, 1 from unnest(${buckets as string[]}::text[]) as bucket
    on conflict (organization_id, window_start) do update set count = rate_limit_windows.count + 1
    returning organization_id as bucket, count`;
  const counts = new Map(rows.map((row) => [row.bucket, Number(row.count)]));
  return buckets.map((bucket) => counts.get(bucket) ?? 0);
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
