import { assertConfigValid, type ConfigIssue } from "@parley/core";
import { tracingConfigFields } from "@parley/tracing";
import { attachmentStoreFields, parseWorkerConfig, type WorkerConfig } from "@parley/worker/config";
import { z } from "zod";

/** A switch: `true`/`1` or `false`/`0`. */
function onOff(fallback: "true" | "false") {
  return z
    .enum(["true", "false", "1", "0"])
    .default(fallback)
    .transform((value) => value === "true" || value === "1");
}

const fields = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default("0.0.0.0"),
  DATABASE_URL: z.string().optional(),
  /**
   * A direct (or session-pooled) connection to the same database, for what a transaction
   * pooler cannot carry: migrations' advisory lock, LISTEN/NOTIFY. `DATABASE_URL` when unset.
   */
  DATABASE_DIRECT_URL: z.string().optional(),
  DATA_DIR: z.string().min(1).default(".data"),
  /** A PostgreSQL bin directory whose `postgres` and `initdb` the embedded server runs instead of the bundled ones. */
  EMBEDDED_POSTGRES_BIN_DIR: z.string().min(1).optional(),
  /** Connections each API process keeps to PostgreSQL (see docs/operations.md). */
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  /**
   * While the API process takes under 200 writes a second, a write adds its delivery and
   * webhook jobs itself, in its transaction, instead of outbox rows for a worker's relay
   * (a latency hint, see RequestRelay). Off: every write goes through the outbox.
   */
  RELAY_IN_REQUEST: onOff("true"),
  /**
   * Sends that reach a process in one turn of the event loop share one transaction
   * (http/group-commit.ts). Off: each its own. For measuring the lever (bench/README.md).
   */
  GROUP_COMMIT: onOff("true"),
  /**
   * A page's messages kept as JSON by their rows' versions (messages/message-texts.ts).
   * Off: every page's messages are read and written anew. For measuring the lever.
   */
  MESSAGE_TEXTS: onOff("true"),
  /** Off only behind a pooler that cannot keep prepared statements (PgBouncer before 1.21). */
  DATABASE_PREPARED_STATEMENTS: onOff("true"),
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(600),
  /** How long an organization's request counts wait in the process before they are added to the shared count. */
  RATE_LIMIT_FLUSH_MS: z.coerce.number().int().min(1).max(1_000).default(50),
  /** The most requests of one organization a process counts ahead of the shared count (the over-admission bound per process). */
  RATE_LIMIT_FLUSH_BATCH: z.coerce.number().int().min(1).default(100),
  /** How long an active API key is taken from memory before it is read again (0: read on every request). */
  API_KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).default(60_000),
  /** GET /events shows this many days (the worker removes older events and delivery records). */
  EVENT_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  /** The most pixels (width × height) an uploaded image may declare, whatever its file size. */
  IMAGE_MAX_PIXELS: z.coerce.number().int().min(1_000_000).max(268_402_689).default(25_000_000),
  /** Images each API process decodes and re-encodes at once; more uploads wait their turn. */
  IMAGE_PROCESSING_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
  /** Webhook endpoints one environment of an organization may hold: each is one more POST per event. */
  WEBHOOK_ENDPOINTS_PER_ENVIRONMENT: z.coerce.number().int().min(1).max(1000).default(16),
  /** Meta webhook requests (`/v1/channels/webhooks/meta`) per minute per source address. */
  META_WEBHOOK_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(1200),
  /** SMS provider webhook requests (`/v1/channels/webhooks/twilio`, `/vonage/*`) per minute per source address. */
  SMS_WEBHOOK_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(1200),
  /** The web chat visitor API, which anyone can reach (docs/guides/webchat.md): new sessions and messages per minute. */
  WEBCHAT_SESSIONS_PER_MINUTE_PER_ADDRESS: z.coerce.number().int().min(1).default(10),
  WEBCHAT_SESSIONS_PER_MINUTE_PER_CHANNEL: z.coerce.number().int().min(1).default(300),
  WEBCHAT_MESSAGES_PER_MINUTE_PER_ADDRESS: z.coerce.number().int().min(1).default(30),
  WEBCHAT_MESSAGES_PER_MINUTE_PER_CHANNEL: z.coerce.number().int().min(1).default(1200),
  /** Open web chat event streams per source address and per API process (a session has at most 2). */
  WEBCHAT_STREAMS_PER_ADDRESS: z.coerce.number().int().min(1).default(20),
  WEBCHAT_STREAMS_PER_PROCESS: z.coerce.number().int().min(1).default(2000),
  /** A web chat visitor token unused for this many days expires. */
  WEBCHAT_SESSION_IDLE_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  /** The address clients use, for absolute URLs in responses; defaults to the local one. */
  PUBLIC_BASE_URL: z.string().url().optional(),
  /** 32 bytes (hex or base64) sealing channel provider secrets; required in production. */
  PARLEY_SECRETS_KEY: z.string().optional(),
  /** During a rotation, the key before PARLEY_SECRETS_KEY: still opens what it sealed until `admin reseal-secrets` ran. */
  PARLEY_SECRETS_KEY_PREVIOUS: z.string().optional(),
  /**
   * Slow clients (README, Configuration): a request's headers must arrive within this many
   * milliseconds (slowloris), the whole request, body included, within the next; an idle
   * keep-alive connection is closed after the last. Node answers 408 and closes.
   */
  HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(100).default(20_000),
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).default(120_000),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(100).default(5_000),
  /** The bearer token `GET /metrics` on the API's port needs; without it (and without `METRICS_PORT`) there is no `/metrics`. */
  METRICS_TOKEN: z.string().min(16).optional(),
  /** Serves `GET /metrics` on this port instead (bound to `METRICS_HOST`), not on the API's port. */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  METRICS_HOST: z.string().default("127.0.0.1"),
  /**
   * On SIGTERM/SIGINT, `/readyz` answers 503 at once; the server keeps serving this many
   * milliseconds more (for load balancers to notice and drain it), then closes gracefully.
   */
  SHUTDOWN_DRAIN_MS: z.coerce.number().int().min(0).max(300_000).default(0),
  /**
   * The authserv-id of the relay whose Authentication-Results header `POST
   * /channels/{id}/inbound-email` trusts instead of checking DKIM and DMARC itself.
   */
  INBOUND_EMAIL_TRUSTED_AUTHSERV_ID: z.string().min(1).optional(),
  /** Run the worker inside the API process (`pnpm start`); off for a separate worker. */
  RUN_WORKER: onOff("true"),
  /** OpenTelemetry tracing: off unless an OTLP endpoint is set (docs/operations.md, "Tracing"). */
  ...tracingConfigFields,
  ...attachmentStoreFields,
});

export type Config = z.infer<typeof fields>;

/**
 * Read once at start; nothing deeper in the code reads `process.env`. Every problem is named
 * at once, in one `StartupError` line (values of secrets never shown); with `worker`, the
 * variables of the worker running in this process are checked in the same line.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  return loadConfigs(env).config;
}

export function loadConfigs(env: NodeJS.ProcessEnv = process.env): { config: Config; workerConfig?: WorkerConfig } {
  const result = fields.safeParse(env);
  const issues: ConfigIssue[] = result.success ? [] : [...result.error.issues];
  if (result.success && result.data.HTTP_REQUEST_TIMEOUT_MS < result.data.HTTP_HEADERS_TIMEOUT_MS) {
    issues.push({ path: ["HTTP_REQUEST_TIMEOUT_MS"], message: "must be at least HTTP_HEADERS_TIMEOUT_MS" });
  }
  const worker = result.success && !result.data.RUN_WORKER ? undefined : parseWorkerConfig(env);
  issues.push(...(worker?.issues ?? []));
  assertConfigValid(issues, env);
  if (!result.success) throw new Error("unreachable: an invalid configuration passed its check");
  return worker?.config ? { config: result.data, workerConfig: worker.config } : { config: result.data };
}
