import http from "node:http";
import { type ListeningServer, listenHttp } from "@parley/core";
import type { Database } from "@parley/db";
import { sql } from "drizzle-orm";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** The tasks a job label may name; anything else counts as `other` (labels stay bounded). */
const TASKS = new Set([
  "deliver_message",
  "deliver_webhook",
  "apply_receipt",
  "receive_meta_webhook",
  "cleanup_expired",
]);

/** A provider error code is a short token (`131047`, `channel_misconfigured`); anything else is `other`. */
function boundedCode(code: string | undefined): string {
  if (!code) return "none";
  return /^[a-z_]{1,40}$|^\d{1,7}$/.test(code) ? code : "other";
}

/**
 * The worker's Prometheus metrics, in a registry of its own. Labels hold a channel type,
 * a status, an error code, a task name or an outcome: never an id, a key or a text.
 */
export class WorkerMetrics {
  readonly registry = new Registry();
  private readonly messages: Counter;
  private readonly webhookAttempts: Counter;
  private readonly webhookDuration: Histogram;

  constructor(db: Database) {
    collectDefaultMetrics({ register: this.registry });
    this.messages = new Counter({
      name: "parley_messages_total",
      help: "Outbound messages this worker moved to a status (sent, failed), by channel type and provider error code.",
      labelNames: ["channel_type", "status", "error_code"],
      registers: [this.registry],
    });
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

  message(channelType: string, status: "sent" | "failed", errorCode?: string): void {
    this.messages.inc({ channel_type: channelType, status, error_code: boundedCode(errorCode) });
  }

  webhookAttempt(succeeded: boolean, durationMs: number): void {
    const outcome = succeeded ? "succeeded" : "failed";
    this.webhookAttempts.inc({ outcome });
    this.webhookDuration.observe({ outcome }, durationMs / 1000);
  }
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
