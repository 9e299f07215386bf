import { timingSafeEqual } from "node:crypto";
import type { AppliedStatus } from "@parley/core";
import { type ListeningServer, listenHttp } from "@parley/core";
import type { Database, PoolUsage } from "@parley/db";
import { channelStatuses, channelTypes } from "@parley/schema";
import { collectProcessMetrics, messageStatusCounter, registerPoolGauges } from "@parley/worker";
import { sql } from "drizzle-orm";
import express, { type Request, type Response } from "express";
import type { Logger } from "pino";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { ApiError } from "./api-error.js";
import { errorHandler, routeNotFound } from "./error-handler.js";
import { createExpressServer } from "./express-server.js";
import { requestId } from "./request-id.js";
import { requestLog } from "./request-log.js";
import { routeTemplateOf } from "./request-span.js";

/** Backlog counts stop at this many rows: the query stays cheap when a backlog is huge. */
export const BACKLOG_COUNT_CAP = 100_000;

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/**
 * What the API made of a provider's webhook (`parley_provider_webhooks_total`): `accepted`
 * (queued for the worker), `unknown_channel` (about no connected channel: acknowledged,
 * ignored), `ignored` (signed, but nothing to do: an interim Twilio status),
 * `bad_signature`, `invalid` (not JSON, a malformed handshake), `too_large`, `rate_limited`,
 * `verified` (a subscription handshake answered), `bad_verify_token` (a handshake naming no
 * channel's token), `error` (a 5xx).
 */
export type ProviderWebhookResult =
  | "accepted"
  | "unknown_channel"
  | "ignored"
  | "bad_signature"
  | "bad_verify_token"
  | "invalid"
  | "too_large"
  | "rate_limited"
  | "verified"
  | "error";

/** The providers whose webhooks the API takes (`/v1/channels/webhooks/<provider>`). */
export type WebhookProvider = "meta" | "twilio" | "vonage";

const CHANNEL_TYPES = new Set<string>(channelTypes);

/**
 * The API's Prometheus metrics, in a registry of its own (several apps may share a process
 * in tests). Labels only ever hold a route template, a method, a status, a channel type,
 * a provider, a result or an error code: never an id, a key or a text.
 */
export interface ApiMetrics {
  registry: Registry;
  httpRequests: Counter;
  httpDuration: Histogram;
  /** Counts a send the API accepted (written with its outbox row). */
  messageAccepted(channelType: string): void;
  /** Counts a receipt the API applied (the web chat page's `delivered` and `read`). */
  statusApplied(applied: AppliedStatus): void;
  /** Counts a provider webhook by what became of it. */
  providerWebhook(provider: WebhookProvider, result: ProviderWebhookResult): void;
  /** Records a shared transaction of sends (group-commit.ts): its members, and whether it committed. */
  transactionGroup(members: number, committed: boolean): void;
}

/**
 * `pool`: this process's database pool (`DatabaseClient.pool`), read at scrape time.
 * `registry`: the process's registry when a worker runs in the process too (`pnpm start`),
 * so its one `/metrics` serves the worker's families as well.
 */
export function createApiMetrics(
  db: Database,
  pool?: () => PoolUsage,
  registry: Registry = new Registry(),
): ApiMetrics {
  collectProcessMetrics(registry);
  const httpRequests = new Counter({
    name: "parley_http_requests_total",
    help: "HTTP requests answered, by route template, method and status.",
    labelNames: ["route", "method", "status"],
    registers: [registry],
  });
  const httpDuration = new Histogram({
    name: "parley_http_request_duration_seconds",
    help: "Time to answer an HTTP request, by route template, method and status.",
    labelNames: ["route", "method", "status"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const messages = new Counter({
    name: "parley_messages_accepted_total",
    help: "Outbound messages the API accepted, by channel type.",
    labelNames: ["channel_type"],
    registers: [registry],
  });
  const statuses = messageStatusCounter(registry);
  const providerWebhooks = new Counter({
    name: "parley_provider_webhooks_total",
    help: "Provider webhooks received (Meta, Twilio, Vonage), by what became of them: accepted, unknown_channel, ignored, bad_signature, invalid, too_large, rate_limited, verified, bad_verify_token, error.",
    labelNames: ["provider", "result"],
    registers: [registry],
  });
  const groupMembers = new Histogram({
    name: "parley_transaction_group_members",
    help: "Sends that ran in one shared transaction (group commit), per transaction that committed.",
    buckets: [1, 2, 4, 8, 16],
    registers: [registry],
  });
  const groups = new Counter({
    name: "parley_transaction_groups_total",
    help: "Shared transactions of sends, by result: committed, or aborted (a statement failed; each member then ran alone).",
    labelNames: ["result"],
    registers: [registry],
  });
  if (pool) registerPoolGauges(registry, pool);
  // One query per outbox per scrape fills both gauges (prom-client collects metrics concurrently).
  let reading: Promise<void> | undefined;
  const readOutboxes = () => {
    reading ??= (async () => {
      for (const table of ["message_outbox", "event_outbox"] as const) {
        const rows = await db.execute<{ backlog: string; age: string | null }>(sql`
          select (select count(*) from (select 1 from ${sql.identifier(table)} limit ${BACKLOG_COUNT_CAP}) capped)::text as backlog,
                 (select extract(epoch from now() - created_at) from ${sql.identifier(table)} order by id limit 1)::text as age`);
        backlog.set({ outbox: table }, Number(rows[0]?.backlog ?? 0));
        oldest.set({ outbox: table }, Math.max(0, Number(rows[0]?.age ?? 0)));
      }
    })().finally(() => {
      reading = undefined;
    });
    return reading;
  };
  const backlog = new Gauge({
    name: "parley_outbox_backlog",
    help: `Rows waiting in an outbox (message_outbox: sends to relay; event_outbox: events to fan out to webhooks), counted up to ${BACKLOG_COUNT_CAP}.`,
    labelNames: ["outbox"],
    registers: [registry],
    collect: readOutboxes,
  });
  const oldest = new Gauge({
    name: "parley_outbox_oldest_age_seconds",
    help: "Age of the oldest row of an outbox (primary-key order: indexed); 0 when it is empty.",
    labelNames: ["outbox"],
    registers: [registry],
    collect: readOutboxes,
  });
  new Gauge({
    name: "parley_channels",
    help: "Connected (non-sandbox) channels by type and status (active, needs_attention, disconnected), read at scrape time.",
    labelNames: ["channel_type", "status"],
    registers: [registry],
    async collect() {
      const rows = await db.execute<{ type: string; status: string; count: string }>(sql`
        select type, status, count(*)::text as count from channels where provider <> 'sandbox' group by 1, 2`);
      this.reset();
      for (const type of channelTypes)
        for (const status of channelStatuses) this.set({ channel_type: type, status }, 0);
      for (const row of rows) {
        // Bounded whatever the table holds: only the catalogue's types and statuses are labels.
        if (!isOneOf(channelTypes, row.type) || !isOneOf(channelStatuses, row.status)) continue;
        this.set({ channel_type: row.type, status: row.status }, Number(row.count));
      }
    },
  });
  return {
    registry,
    httpRequests,
    httpDuration,
    messageAccepted: (channelType) => messages.inc({ channel_type: channelType }),
    statusApplied: (applied) => {
      if (applied.status === "sent") return;
      const type = applied.channelType && CHANNEL_TYPES.has(applied.channelType) ? applied.channelType : "other";
      statuses.inc({ channel_type: type, status: applied.status, error_code: "none" });
    },
    providerWebhook: (provider, result) => providerWebhooks.inc({ provider, result }),
    transactionGroup: (members, committed) => {
      groups.inc({ result: committed ? "committed" : "aborted" });
      if (committed) groupMembers.observe(members);
    },
  };
}

function isOneOf(values: readonly string[], value: string): boolean {
  return values.includes(value);
}

/**
 * Counts a request answered after `elapsedMs` under its route template
 * (`/v1/contacts/:id`), never its path: a request that matched no route counts as
 * `unmatched`. For the `finish` listener of the API's first layer (requestBasics).
 */
export function httpObserver(metrics: ApiMetrics): (req: Request, res: Response, elapsedMs: number) => void {
  // The series of each route, method and status, looked up once: prom-client hashes a
  // label object on every call given one (a few per cent of a short request's CPU). Their
  // number is bounded by the routes' templates, the methods and the statuses.
  const seriesByLabels = new Map<string, { requests: { inc(): void }; duration: { observe(value: number): void } }>();
  return (req, res, elapsedMs) => {
    const route = routeTemplateOf(req, res) ?? "unmatched";
    const method = METHODS.has(req.method) ? req.method : "other";
    const status = res.statusCode;
    const key = `${method} ${status} ${route}`;
    let series = seriesByLabels.get(key);
    if (!series) {
      const labels = { route, method, status: String(status) };
      series = { requests: metrics.httpRequests.labels(labels), duration: metrics.httpDuration.labels(labels) };
      seriesByLabels.set(key, series);
    }
    series.requests.inc();
    series.duration.observe(elapsedMs / 1000);
  };
}

function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** `GET /metrics`, the text exposition format; with a token, only for `Authorization: Bearer <token>`. */
export function metricsHandler(registry: Registry, token: string | undefined): express.RequestHandler {
  return async (req, res) => {
    if (token !== undefined) {
      const header = req.get("authorization");
      if (!header)
        throw new ApiError("authentication_required", "GET /metrics needs `Authorization: Bearer <METRICS_TOKEN>`.");
      const match = /^Bearer (.+)$/i.exec(header);
      if (!match?.[1] || !sameToken(match[1], token))
        throw new ApiError("invalid_api_key", "The metrics token is wrong.");
    }
    const body = await registry.metrics();
    res.setHeader("content-type", registry.contentType);
    res.send(body);
  };
}

/** `GET /metrics` alone on a port of its own (`METRICS_PORT`): keep that port off the internet. */
export async function metricsServer(
  metrics: ApiMetrics,
  token: string | undefined,
  port: number,
  host: string,
  logger: Logger,
): Promise<ListeningServer> {
  const app = express();
  app.disable("x-powered-by");
  app.use(requestId);
  app.use(requestLog(app, logger));
  app.get("/metrics", metricsHandler(metrics.registry, token));
  app.use(routeNotFound);
  app.use(errorHandler);
  return listenHttp(createExpressServer(app), port, host);
}
