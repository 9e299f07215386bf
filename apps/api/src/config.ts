import { z } from "zod";

const schema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default("0.0.0.0"),
  DATABASE_URL: z.string().optional(),
  DATA_DIR: z.string().default(".data"),
  /** Connections each API process keeps to PostgreSQL (see docs/operations.md). */
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(600),
  /** The address clients use, for absolute URLs in responses; defaults to the local one. */
  PUBLIC_BASE_URL: z.string().url().optional(),
  /** 32 bytes (hex or base64) sealing channel provider secrets; required in production. */
  PARLEY_SECRETS_KEY: z.string().optional(),
  /** Run the worker inside the API process (`pnpm start`); off for a separate worker. */
  RUN_WORKER: z
    .enum(["true", "false", "1", "0"])
    .default("true")
    .transform((value) => value === "true" || value === "1"),
});

export type Config = z.infer<typeof schema>;

/** Read once at start; nothing deeper in the code reads `process.env`. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const result = schema.safeParse(env);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`).join("; ");
    throw new Error(`Invalid configuration: ${problems}`);
  }
  return result.data;
}
