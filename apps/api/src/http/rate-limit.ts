import { type Queryable, rateLimitWindows } from "@parley/db";
import { sql } from "drizzle-orm";
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

function setHeaders(res: Response, limit: number, remaining: number, resetSeconds: number) {
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
    setHeaders(res, limit, limit, window.resetSeconds);
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
    setHeaders(res, limit, limit - count, window.resetSeconds);
    if (count > limit) throw rateLimited(limit, window, now);
    next();
  };
}

function rateLimited(limit: number, window: RateLimitWindow, now: number): ApiError {
  const retryAfter = Math.max(1, window.resetSeconds - Math.floor(now / 1000));
  return new ApiError(
    "rate_limited",
    `Rate limit of ${limit} requests per minute exceeded; retry after ${retryAfter} s.`,
    {
      headers: { "Retry-After": String(retryAfter) },
    },
  );
}

/**
 * For keyless routes, before anything else is read: fixed one-minute windows per source
 * address (the connecting socket's: `trust proxy` is off), counted in the same shared
 * table as the organizations' allowances under the key `<scope>:<address>`, and answered
 * with the same 429 and headers.
 */
export function sourceRateLimit(db: Queryable, scope: string, limit: number): RequestHandler {
  return async (req, res, next) => {
    const now = Date.now();
    const window = windowOf(now);
    const key = `${scope}:${req.socket.remoteAddress ?? "unknown"}`;
    const [row] = await db
      .insert(rateLimitWindows)
      // `organization_id` holds any counter's key: an organization's id, or this.
      .values({ organizationId: key, windowStart: window.start, count: 1 })
      .onConflictDoUpdate({
        target: [rateLimitWindows.organizationId, rateLimitWindows.windowStart],
        set: { count: sql`${rateLimitWindows.count} + 1` },
      })
      .returning({ count: rateLimitWindows.count });
    const count = row?.count ?? 1;
    setHeaders(res, limit, limit - count, window.resetSeconds);
    if (count > limit) throw rateLimited(limit, window, now);
    next();
  };
}
