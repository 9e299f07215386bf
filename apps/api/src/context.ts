import type { AttachmentStore, EmailAuthenticationOptions, SecretBox, WebhookSender } from "@parley/core";
import type { Database, Queryable } from "@parley/db";
import type { Logger } from "pino";
import type { ImageLimits } from "./attachments/process-image.js";
import type { ApiKeyCache } from "./http/key-cache.js";
import type { ApiMetrics } from "./http/metrics.js";
import type { CursorCodec } from "./http/pagination.js";
import type { RateLimitCounter } from "./http/rate-limit.js";
import type { RequestRelay } from "./http/request-relay.js";
import type { ReplyHub } from "./webchat/reply-hub.js";
import type { WebchatLimits } from "./webchat/visitor-limits.js";

/** What every route and service needs, built once at start and passed down. */
export interface AppContext {
  db: Database;
  cursors: CursorCodec;
  /** Seals and opens channel provider secrets. */
  secretBox: SecretBox;
  /** Where attachment bytes live: PostgreSQL, or an S3-compatible bucket (`ATTACHMENTS_S3_BUCKET`). */
  attachmentStore: AttachmentStore;
  /** Signs and checks the keyless, expiring file links given to providers (`/files/{id}`). */
  contentUrlSecret: string;
  logger: Logger;
  rateLimitPerMinute: number;
  /** Counts the organizations' requests in the process, adding them to PostgreSQL's counts every few ms. */
  rateLimitCounter: RateLimitCounter;
  /** Active keys by their hash, while revocations are heard (`listenForRevocations`); absent: every request reads its key. */
  apiKeyCache?: ApiKeyCache;
  /** `EVENT_RETENTION_DAYS` (30): how far back events are shown. */
  eventRetentionDays?: number;
  /** Requests to the keyless Meta webhook per minute per source address. */
  metaWebhookRateLimitPerMinute: number;
  /** Requests to the keyless SMS provider webhooks (Twilio, Vonage) per minute per source address. */
  smsWebhookRateLimitPerMinute: number;
  /** The web chat visitor API's own allowances (it has no organization key to count by). */
  webchatLimits: WebchatLimits;
  /** This process's web chat event streams and the one poller behind them. */
  replyHub: ReplyHub;
  /** The address clients reach this server at, without `/v1`: absolute URLs in responses. */
  publicBaseUrl: () => string;
  /** Sends test and hand-retried webhooks from the API process. */
  webhookSender: WebhookSender;
  /** Production: webhook URLs must resolve to public addresses, at creation and delivery. */
  blockPrivateWebhookAddresses: boolean;
  /** Uploaded images: the pixel cap and the process's slots (`IMAGE_MAX_PIXELS`, `IMAGE_PROCESSING_CONCURRENCY`). */
  images: ImageLimits;
  /** Webhook endpoints one environment may hold (`WEBHOOK_ENDPOINTS_PER_ENVIRONMENT`). */
  webhookEndpointsPerEnvironment: number;
  /** How the senders of mail posted to the inbound-email route are authenticated (DKIM, DMARC, or a trusted relay). */
  emailAuthentication: EmailAuthenticationOptions;
  /**
   * Set when `db` is already a transaction (an idempotent request's): a service that
   * needs no savepoint of its own runs in it directly (`withTransaction`).
   */
  inTransaction?: boolean;
  /** This process's Prometheus metrics (http/metrics.ts). */
  metrics?: ApiMetrics;
  /** Set when `GET /metrics` is served on the API's own port: the bearer token it needs. */
  metricsToken?: string;
  /** True once shutdown began: `/readyz` answers 503 so load balancers drain this process. */
  shuttingDown?: () => boolean;
  /** Called after a request that may have written to an outbox: wakes an in-process relay (a latency hint only). */
  onChangeCommitted?: () => void;
  /** Set unless `RELAY_IN_REQUEST=false`: when a write adds its jobs itself (see relayNow). */
  requestRelay?: RequestRelay;
  /** The hot paths' levers (`GROUP_COMMIT`, `MESSAGE_TEXTS`); all on when absent. */
  levers?: Levers;
}

/** Mechanisms that only make requests cheaper, each switched off to measure what it earns (bench/README.md). */
export interface Levers {
  groupCommit: boolean;
  messageTexts: boolean;
}

/**
 * Whether this request's send or events add their delivery and webhook jobs in its own
 * transaction, rather than outbox rows (RequestRelay): a latency hint, never needed for
 * correctness.
 */
export function relayNow(app: AppContext): boolean {
  return app.requestRelay?.now() ?? false;
}

/**
 * Runs `work` in a transaction: the request's own when it has one (no savepoint: the
 * caller's failure rolls everything back anyway), else a new one. Only for work that
 * never recovers from a failed statement itself.
 */
export function withTransaction<T>(app: AppContext, work: (tx: Queryable) => Promise<T>): Promise<T> {
  if (app.inTransaction) return work(app.db);
  return app.db.transaction(work);
}
