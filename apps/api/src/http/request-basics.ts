import { context } from "@opentelemetry/api";
import type { Express, RequestHandler } from "express";
import type { AppContext } from "../context.js";
import { httpObserver } from "./metrics.js";
import { setDefaultRateLimitHeaders } from "./rate-limit.js";
import { assignRequestId } from "./request-id.js";
import { installRequestLogger } from "./request-log.js";
import { startRequestSpan } from "./request-span.js";

/**
 * What every request gets before routing, in one express layer: its id, the rate-limit
 * headers' defaults, its span when tracing is on, and one `finish` listener for the
 * access log's line, the HTTP metrics and, after a write, the relays' wake-up (its
 * transaction has committed by the time the response ends). One layer and one listener
 * rather than six of each: express dispatches every layer (a match, a step of its
 * router's `next`, an object per match), and every `once` wraps its listener
 * (bench/notebook.md, "2026-11-26: one layer before routing").
 */
export function requestBasics(server: Express, app: AppContext): RequestHandler {
  const logCompleted = installRequestLogger(server, app.logger);
  const observe = app.metrics ? httpObserver(app.metrics) : undefined;
  return (req, res, next) => {
    assignRequestId(req, res);
    setDefaultRateLimitHeaders(res, app.rateLimitPerMinute);
    // Before the listener below: the span's context is bound to the listeners added after it.
    const span = startRequestSpan(req, res);
    const isWrite = req.method !== "GET" && req.method !== "HEAD";
    // Ended by `close`, which follows `finish` and also comes for a request never answered.
    const relay = isWrite ? app.requestRelay : undefined;
    const write = relay?.writeBegan();
    if (relay && write) res.once("close", () => relay.writeEnded(write));
    if (logCompleted || observe || isWrite) {
      const started = performance.now();
      res.once("finish", () => {
        const elapsedMs = performance.now() - started;
        logCompleted?.(req, res, elapsedMs);
        observe?.(req, res, elapsedMs);
        // A write that added its own jobs leaves the relays nothing to do (RequestRelay).
        if (isWrite && !write?.relayedItself) app.onChangeCommitted?.();
      });
    }
    if (span) context.with(span, next);
    else next();
  };
}
