import type { SecretBox, WebhookSender } from "@parley/core";
import type { Database, Queryable } from "@parley/db";
import type { Logger } from "pino";
import type { CursorCodec } from "./http/pagination.js";
import type { ReplyHub } from "./webchat/reply-hub.js";
import type { WebchatLimits } from "./webchat/visitor-limits.js";

/** What every route and service needs, built once at start and passed down. */
export interface AppContext {
  db: Database;
  cursors: CursorCodec;
  /** Seals and opens channel provider secrets. */
  secretBox: SecretBox;
  /** Signs and checks the keyless, expiring file links given to providers (`/files/{id}`). */
  contentUrlSecret: string;
  logger: Logger;
  rateLimitPerMinute: number;
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
  /**
   * Set when `db` is already a transaction (an idempotent request's): a service that
   * needs no savepoint of its own runs in it directly (`withTransaction`).
   */
  inTransaction?: boolean;
  /** Called after a request that may have written to an outbox: wakes an in-process relay (a latency hint only). */
  onChangeCommitted?: () => void;
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
