import { z } from "zod";

const schema = z.object({
  DATABASE_URL: z.string().optional(),
  PUBLIC_BASE_URL: z.url().optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(100).default(10),
  /** Sandbox: after acceptance, when `delivered` arrives (about a second by default). */
  SANDBOX_DELIVERY_DELAY_MS: z.coerce.number().int().min(0).max(60_000).default(500),
  /** Sandbox: after `delivered`, when `read` arrives for `[sandbox:read]`. */
  SANDBOX_READ_DELAY_MS: z.coerce.number().int().min(0).max(60_000).default(1000),
  WORKER_HEARTBEAT_TIMEOUT_MS: z.coerce.number().int().min(1000).default(30_000),
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  /** Tests and local development only: the webhook retry schedule in seconds instead of minutes. */
  PARLEY_WEBHOOK_FAST_RETRY: z
    .enum(["0", "1", "true", "false"])
    .default("0")
    .transform((value) => value === "1" || value === "true"),
});

export type WorkerConfig = z.infer<typeof schema>;

/** Read once at start; nothing deeper in the worker reads `process.env`. */
export function loadWorkerConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  const result = schema.safeParse(env);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`).join("; ");
    throw new Error(`Invalid worker configuration: ${problems}`);
  }
  return result.data;
}

/** The worker options a configuration gives, for `startWorker`. */
export function workerOptionsFrom(config: WorkerConfig) {
  return {
    concurrency: config.WORKER_CONCURRENCY,
    sandbox: { deliveryDelayMs: config.SANDBOX_DELIVERY_DELAY_MS, readDelayMs: config.SANDBOX_READ_DELAY_MS },
    heartbeatIntervalMs: Math.max(500, Math.floor(config.WORKER_HEARTBEAT_TIMEOUT_MS / 6)),
    heartbeatTimeoutMs: config.WORKER_HEARTBEAT_TIMEOUT_MS,
    blockPrivateWebhookAddresses: config.NODE_ENV === "production",
    webhookFastRetry: config.PARLEY_WEBHOOK_FAST_RETRY,
  };
}
