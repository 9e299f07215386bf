import http from "node:http";
import { channelTypes } from "@parley/channels";
import type { AppliedStatus } from "@parley/core";
import { type ListeningServer, listenHttp } from "@parley/core";
import type { Database, PoolUsage } from "@parley/db";
import { sql } from "drizzle-orm";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** The tasks a job label may name; anything else counts as `other` (labels stay bounded). */
const TASKS = new Set([
  "deliver_message",
  "deliver_webhook",
  "apply_receipt",
  "receive_meta_webhook",
  "receive_twilio_webhook",
  "receive_vonage_webhook",
  "cleanup_expired",
]);

/** A provider error code is a short token (`131047`, `channel_misconfigured`); anything else is `other`. */
function boundedCode(code: string | undefined): string {
  if (!code) return "none";
  return /^[a-z_]{1,40}$|^\d{1,7}$/.test(code) ? code : "other";
}

/** What the inbound SMTP server made of a message or a connection (`parley_inbound_emails_total`). */
export type InboundEmailResult =
  | "accepted"
  | "duplicate"
  | "unknown_recipient"
  | "too_large"
  | "invalid"
  | "temporary_failure"
  | "too_many_connections";

const CHANNEL_TYPES = new Set<string>(channelTypes);

/**
 * The worker's Prometheus metrics, in a registry of its own. Labels hold a channel type,
 * a status, an error code, a task name, an outcome or a result: never an id, a key or a text.
 */
export class WorkerMetrics {
  readonly registry: Registry;
  private readonly messages: Counter;
  private readonly webhookAttempts: Counter;
  private readonly webhookDuration: Histogram;
  private readonly inboundEmails: Counter;

  /**
   * `pool`: this worker's database pool (`DatabaseClient.pool`), read at scrape time.
   * `registry`: the process's registry when the worker shares its process (and its one
   * `/metrics`) with an API; a registry of its own otherwise.
   */
  constructor(db: Database, pool?: () => PoolUsage, registry: Registry = new Registry()) {
    this.registry = registry;
    collectProcessMetrics(this.registry);
    this.messages = messageStatusCounter(this.registry);
    this.inboundEmails = new Counter({
      name: "parley_inbound_emails_total",
      help: "Inbound SMTP: messages accepted, duplicate (already stored: acknowledged) or refused (too_large, invalid, temporary_failure), recipients refused (unknown_recipient), connections refused (too_many_connections).",
      labelNames: ["result"],
      registers: [this.registry],
    });
    if (pool) registerPoolGauges(this.registry, pool);
    this.webhookAttempts = new Counter({
      name: "parley_webhook_attempts_total",
      help: "Webhook delivery attempts, by outcome (succeeded, failed).",
      labelNames: ["outcome"],
      registers: [this.registry],
    });
    this.webhookDuration = new Histogram({
      name: "parley_webhook_attempt_duration_seconds",
      help: "Time a webhook attempt took, by outcome.",
      labelNames: ["outcome"],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [this.registry],
    });
    new Gauge({
      name: "parley_jobs",
      help: "graphile-worker jobs by task and state (queued, running, failed: out of attempts), read at scrape time.",
      labelNames: ["task", "state"],
      registers: [this.registry],
      async collect() {
        const rows = await db.execute<{ task: string; queued: string; running: string; failed: string }>(sql`
          select task_identifier as task,
                 count(*) filter (where locked_at is null and attempts < max_attempts)::text as queued,
                 count(*) filter (where locked_at is not null)::text as running,
                 count(*) filter (where locked_at is null and attempts >= max_attempts)::text as failed
          from graphile_worker.jobs group by 1`);
        this.reset();
        for (const task of TASKS) for (const state of ["queued", "running", "failed"]) this.set({ task, state }, 0);
        for (const row of rows) {
          const task = TASKS.has(row.task) ? row.task : "other";
          for (const state of ["queued", "running", "failed"] as const) this.inc({ task, state }, Number(row[state]));
        }
      },
    });
  }

  message(channelType: string, status: "sent" | "delivered" | "read" | "failed", errorCode?: string): void {
    const type = CHANNEL_TYPES.has(channelType) ? channelType : "other";
    this.messages.inc({ channel_type: type, status, error_code: boundedCode(errorCode) });
  }

  /**
   * A receipt the state machine applied (`delivered`, `read`, `failed`). A `sent` receipt
   * is not counted: the send counted it (message), whichever of the two arrived first.
   */
  readonly statusApplied = (applied: AppliedStatus): void => {
    if (applied.status === "sent") return;
    this.message(applied.channelType ?? "none", applied.status, applied.errorCode);
  };

  inboundEmail(result: InboundEmailResult): void {
    this.inboundEmails.inc({ result });
  }

  webhookAttempt(succeeded: boolean, durationMs: number): void {
    const outcome = succeeded ? "succeeded" : "failed";
    this.webhookAttempts.inc({ outcome });
    this.webhookDuration.observe({ outcome }, durationMs / 1000);
  }
}

/**
 * The Node.js process's metrics (`process_*`, `nodejs_*`), once per registry: an API and a
 * worker in one process share one registry.
 */
export function collectProcessMetrics(registry: Registry): void {
  if (registry.getSingleMetric("process_cpu_user_seconds_total")) return;
  collectDefaultMetrics({ register: registry });
}

/**
 * `parley_messages_total`: outbound messages moved to a status, by the worker (sends and
 * receipts) and by the API (the web chat page's receipts); one counter per registry.
 */
export function messageStatusCounter(registry: Registry): Counter {
  const existing = registry.getSingleMetric("parley_messages_total");
  if (existing instanceof Counter) return existing;
  return new Counter({
    name: "parley_messages_total",
    help: "Outbound messages this process moved to a status (sent and failed by the send, delivered, read and failed by receipts, the web chat page's delivered and read), by channel type and provider error code.",
    labelNames: ["channel_type", "status", "error_code"],
    registers: [registry],
  });
}

/** The pools each registry's gauges add up: an API's and a worker's in one process. */
const poolsByRegistry = new WeakMap<Registry, Array<() => PoolUsage>>();

/**
 * `parley_db_pool_in_use`, `_waiting`, `_size`: this process's postgres.js pools (the API's
 * and the worker's, added up when they share a process), as counted by our client
 * (packages/db/src/client.ts), read at scrape time.
 */
export function registerPoolGauges(registry: Registry, pool: () => PoolUsage): void {
  const known = poolsByRegistry.get(registry);
  if (known) {
    known.push(pool);
    return;
  }
  const pools = [pool];
  poolsByRegistry.set(registry, pools);
  const total = (field: keyof PoolUsage) => pools.reduce((sum, usage) => sum + usage()[field], 0);
  new Gauge({
    name: "parley_db_pool_in_use",
    help: "Database connections of this process's pools holding a query or a transaction.",
    registers: [registry],
    collect() {
      this.set(total("inUse"));
    },
  });
  new Gauge({
    name: "parley_db_pool_waiting",
    help: "Queries and transactions of this process waiting for a connection of its own (a pool is exhausted).",
    registers: [registry],
    collect() {
      this.set(total("waiting"));
    },
  });
  new Gauge({
    name: "parley_db_pool_size",
    help: "Connections this process's pools may open (DATABASE_POOL_SIZE, and the worker's concurrency when it runs in the process).",
    registers: [registry],
    collect() {
      this.set(total("max"));
    },
  });
}

/** `GET /metrics` on the worker's own port (`WORKER_METRICS_PORT`); anything else is 404. */
export async function startMetricsServer(metrics: WorkerMetrics, port: number, host: string): Promise<ListeningServer> {
  const server = http.createServer((req, res) => {
    if (req.method !== "GET" || req.url?.split("?")[0] !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      return;
    }
    metrics.registry.metrics().then(
      (body) => res.writeHead(200, { "content-type": metrics.registry.contentType }).end(body),
      () => res.writeHead(503, { "content-type": "text/plain" }).end("metrics unavailable\n"),
    );
  });
  return listenHttp(server, port, host);
}
