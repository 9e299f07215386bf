import { assertConfigValid, type ConfigIssue, type S3StoreOptions } from "@parley/core";
import { tracingConfigFields } from "@parley/tracing";
import { z } from "zod";

/**
 * Attachments in an S3-compatible bucket instead of PostgreSQL (docs/operations.md): read
 * by the API and every worker alike, which must all name the same bucket. Credentials come
 * from the standard AWS variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, a profile...).
 */
export const attachmentStoreFields = {
  ATTACHMENTS_S3_BUCKET: z.string().min(1).optional(),
  /** An S3-compatible server (MinIO, R2...), addressed path-style; AWS's own when absent. */
  ATTACHMENTS_S3_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  ATTACHMENTS_S3_REGION: z.string().min(1).default("us-east-1"),
  /** Providers fetch files from pre-signed S3 URLs instead of Parley's `/files/` links. */
  ATTACHMENTS_S3_PRESIGN: z
    .enum(["true", "false", "1", "0"])
    .default("false")
    .transform((value) => value === "true" || value === "1"),
};

type AttachmentStoreConfig = z.infer<z.ZodObject<typeof attachmentStoreFields>>;

/** The S3 store's options, or undefined for the default (PostgreSQL). */
export function attachmentStoreOptionsFrom(config: AttachmentStoreConfig): S3StoreOptions | undefined {
  if (!config.ATTACHMENTS_S3_BUCKET) return undefined;
  return {
    bucket: config.ATTACHMENTS_S3_BUCKET,
    endpoint: config.ATTACHMENTS_S3_ENDPOINT,
    region: config.ATTACHMENTS_S3_REGION,
    presign: config.ATTACHMENTS_S3_PRESIGN,
  };
}

const schema = z.object({
  DATABASE_URL: z.string().optional(),
  /** A direct (or session-pooled) connection for graphile-worker and LISTEN, when `DATABASE_URL` is a transaction pooler. */
  DATABASE_DIRECT_URL: z.string().optional(),
  /** Off behind a pooler that cannot keep prepared statements (PgBouncer before 1.21 in transaction mode). */
  DATABASE_PREPARED_STATEMENTS: z
    .enum(["true", "false", "1", "0"])
    .default("true")
    .transform((value) => value === "true" || value === "1"),
  PUBLIC_BASE_URL: z.url().optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(100).default(10),
  /** Webhook deliveries to one endpoint a worker runs at once; all of WORKER_CONCURRENCY but a fifth when unset. */
  WEBHOOK_CONCURRENCY_PER_ENDPOINT: z.coerce.number().int().min(1).max(100).optional(),
  /** The same for an endpoint whose last attempt took a second or more; a fifth of WORKER_CONCURRENCY when unset. */
  WEBHOOK_CONCURRENCY_PER_SLOW_ENDPOINT: z.coerce.number().int().min(1).max(100).optional(),
  /** Sandbox: after acceptance, when `delivered` arrives (about a second by default). */
  SANDBOX_DELIVERY_DELAY_MS: z.coerce.number().int().min(0).max(60_000).default(500),
  /** Sandbox: after `delivered`, when `read` arrives for `[sandbox:read]`. */
  SANDBOX_READ_DELAY_MS: z.coerce.number().int().min(0).max(60_000).default(1000),
  WORKER_HEARTBEAT_TIMEOUT_MS: z.coerce.number().int().min(1000).default(30_000),
  /** Meta's Graph API: where it is reached (a proxy or a simulator in tests) and which version. */
  META_GRAPH_BASE_URL: z.url().default("https://graph.facebook.com"),
  META_GRAPH_API_VERSION: z
    .string()
    .regex(/^v\d+\.\d+$/)
    .default("v23.0"),
  META_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(15_000),
  /** Twilio's REST API (SMS): where it is reached (a proxy or a simulator in tests). */
  TWILIO_API_BASE_URL: z.url().default("https://api.twilio.com"),
  TWILIO_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(15_000),
  /** Vonage's Messages API (SMS): `https://api.nexmo.com`, a regional host (`api-eu.vonage.com`...), or a simulator. */
  VONAGE_API_BASE_URL: z.url().default("https://api.nexmo.com"),
  VONAGE_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(15_000),
  /** 32 bytes (hex or base64) sealing channel provider secrets; required in production. */
  PARLEY_SECRETS_KEY: z.string().optional(),
  /** During a rotation, the key before PARLEY_SECRETS_KEY: still opens what it sealed until `admin reseal-secrets` ran. */
  PARLEY_SECRETS_KEY_PREVIOUS: z.string().optional(),
  /** Events and webhook delivery records are removed after this many days (GET /events shows as many). */
  EVENT_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  /** Inbound email over SMTP: off unless a port is given. */
  SMTP_INBOUND_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  SMTP_INBOUND_HOST: z.string().default("0.0.0.0"),
  /** Inbound SMTP connections open at once, all senders together; past it a sender gets 421. */
  SMTP_INBOUND_MAX_CLIENTS: z.coerce.number().int().min(1).max(10_000).default(100),
  /** Inbound SMTP connections open at once from one IP address; past it, 421. */
  SMTP_INBOUND_MAX_CLIENTS_PER_IP: z.coerce.number().int().min(1).max(10_000).default(10),
  /**
   * The authserv-id of a relay in front of the inbound SMTP server whose Authentication-Results
   * Parley trusts instead of checking SPF, DKIM and DMARC itself.
   */
  INBOUND_EMAIL_TRUSTED_AUTHSERV_ID: z.string().min(1).optional(),
  /** An inbound SMTP connection silent this long is closed. */
  SMTP_INBOUND_SOCKET_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).default(60_000),
  /** Serves `GET /metrics` (Prometheus) on this port, bound to `WORKER_METRICS_HOST`; off when absent. */
  WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  WORKER_METRICS_HOST: z.string().default("127.0.0.1"),
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  /** Tests and local development only: the webhook retry schedule in seconds instead of minutes. */
  PARLEY_WEBHOOK_FAST_RETRY: z
    .enum(["0", "1", "true", "false"])
    .default("0")
    .transform((value) => value === "1" || value === "true"),
  /** OpenTelemetry tracing: off unless an OTLP endpoint is set (docs/operations.md, "Tracing"). */
  ...tracingConfigFields,
  ...attachmentStoreFields,
});

export type WorkerConfig = z.infer<typeof schema>;

/** The worker's variables, parsed: the configuration, or what is wrong with it. */
export function parseWorkerConfig(env: NodeJS.ProcessEnv): { config?: WorkerConfig; issues: ConfigIssue[] } {
  const result = schema.safeParse(env);
  return result.success ? { config: result.data, issues: [] } : { issues: result.error.issues };
}

/** Read once at start; nothing deeper in the worker reads `process.env`. Every problem at once, in one line. */
export function loadWorkerConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  const { config, issues } = parseWorkerConfig(env);
  assertConfigValid(issues, env, "worker configuration");
  if (!config) throw new Error("unreachable: an invalid configuration passed its check");
  return config;
}

/**
 * Where the SMS providers are reached, as the worker's adapters and `pnpm admin`'s
 * credential check (which reads this configuration) both need it.
 */
export function smsProviderOptionsFrom(config: WorkerConfig) {
  return {
    twilio: { baseUrl: config.TWILIO_API_BASE_URL.replace(/\/+$/, ""), timeoutMs: config.TWILIO_TIMEOUT_MS },
    vonage: { baseUrl: config.VONAGE_API_BASE_URL.replace(/\/+$/, ""), timeoutMs: config.VONAGE_TIMEOUT_MS },
  };
}

/** The worker options a configuration gives, for `startWorker`. */
export function workerOptionsFrom(config: WorkerConfig) {
  return {
    ...(config.DATABASE_DIRECT_URL ? { directConnectionString: config.DATABASE_DIRECT_URL } : {}),
    preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
    concurrency: config.WORKER_CONCURRENCY,
    sandbox: { deliveryDelayMs: config.SANDBOX_DELIVERY_DELAY_MS, readDelayMs: config.SANDBOX_READ_DELAY_MS },
    heartbeatIntervalMs: Math.max(500, Math.floor(config.WORKER_HEARTBEAT_TIMEOUT_MS / 6)),
    heartbeatTimeoutMs: config.WORKER_HEARTBEAT_TIMEOUT_MS,
    blockPrivateWebhookAddresses: config.NODE_ENV === "production",
    webhookFastRetry: config.PARLEY_WEBHOOK_FAST_RETRY,
    eventRetentionDays: config.EVENT_RETENTION_DAYS,
    attachmentS3: attachmentStoreOptionsFrom(config),
    ...(config.WORKER_METRICS_PORT === undefined
      ? {}
      : { metrics: { port: config.WORKER_METRICS_PORT, host: config.WORKER_METRICS_HOST } }),
    ...(config.WEBHOOK_CONCURRENCY_PER_ENDPOINT === undefined
      ? {}
      : { webhookConcurrencyPerEndpoint: config.WEBHOOK_CONCURRENCY_PER_ENDPOINT }),
    ...(config.WEBHOOK_CONCURRENCY_PER_SLOW_ENDPOINT === undefined
      ? {}
      : { webhookConcurrencyPerSlowEndpoint: config.WEBHOOK_CONCURRENCY_PER_SLOW_ENDPOINT }),
    meta: {
      graphBaseUrl: config.META_GRAPH_BASE_URL.replace(/\/+$/, ""),
      apiVersion: config.META_GRAPH_API_VERSION,
      timeoutMs: config.META_TIMEOUT_MS,
    },
    ...smsProviderOptionsFrom(config),
    secrets: {
      PARLEY_SECRETS_KEY: config.PARLEY_SECRETS_KEY,
      PARLEY_SECRETS_KEY_PREVIOUS: config.PARLEY_SECRETS_KEY_PREVIOUS,
      NODE_ENV: config.NODE_ENV,
    },
    ...(config.SMTP_INBOUND_PORT === undefined
      ? {}
      : {
          smtpInbound: {
            port: config.SMTP_INBOUND_PORT,
            host: config.SMTP_INBOUND_HOST,
            maxClients: config.SMTP_INBOUND_MAX_CLIENTS,
            maxClientsPerAddress: config.SMTP_INBOUND_MAX_CLIENTS_PER_IP,
            socketTimeoutMs: config.SMTP_INBOUND_SOCKET_TIMEOUT_MS,
            emailAuthentication: { trustedAuthservId: config.INBOUND_EMAIL_TRUSTED_AUTHSERV_ID },
          },
        }),
  };
}
