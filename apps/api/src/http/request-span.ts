import { type Context, context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { tracer, tracingEnabled } from "@parley/tracing";
import type { Request, Response } from "express";

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/** Probes and scrapes, every few seconds from the infrastructure: no span. */
const UNTRACED_PATHS = new Set(["/healthz", "/readyz", "/metrics"]);

/**
 * A server span per request (tracing on), continuing the caller's trace when it sends a W3C
 * `traceparent`. Named `<method> <route template>` (`POST /v1/messages`,
 * `GET /v1/contacts/:id`), never the path; a request that matched no route is named by its
 * method alone. Attributes: method, route, status and the request id; never the URL's
 * query, a header or a body. Everything the request does (its events, its outbox rows)
 * runs inside the span, so the jobs it causes continue its trace: the caller runs the rest
 * of the request in the context returned. Health probes and metric scrapes get none;
 * undefined when tracing is off.
 */
export function startRequestSpan(req: Request, res: Response): Context | undefined {
  if (!tracingEnabled() || UNTRACED_PATHS.has(req.path)) return undefined;
  const method = METHODS.has(req.method) ? req.method : "_OTHER";
  const parent = propagation.extract(ROOT_CONTEXT, req.headers);
  const span = tracer.startSpan(
    method,
    {
      kind: SpanKind.SERVER,
      attributes: { "http.request.method": method, "parley.request_id": req.requestId },
    },
    parent,
  );
  const active = trace.setSpan(parent, span);
  // The body arrives in events of the request: its handlers run in the span too.
  context.bind(active, req);
  context.bind(active, res);
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    const route = routeTemplateOf(req, res);
    if (route) {
      span.updateName(`${method} ${route}`);
      span.setAttribute("http.route", route);
    }
    span.setAttribute("http.response.status_code", res.statusCode);
    if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: String(res.statusCode) });
    span.end();
  };
  res.once("finish", end);
  res.once("close", end);
  return active;
}

/** The route template a request matched (`/v1/contacts/:id`), or undefined when none did. */
export function routeTemplateOf(req: Request, res: Response): string | undefined {
  // Taken when the route ran (bindOperation): an error leaving a router resets req.baseUrl.
  const template: unknown = res.locals.routeTemplate ?? (req.route ? `${req.baseUrl}${req.route.path}` : undefined);
  return typeof template === "string" && /^[\w/:.-]*$/.test(template) ? template : undefined;
}
