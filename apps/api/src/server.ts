import type http from "node:http";
import type { AddressInfo } from "node:net";
import {
  assertSealedSecretsOpen,
  CONTENT_URL_SECRET_NAME,
  createS3AttachmentStore,
  loadInstanceSecret,
  loadSecretBox,
  postgresAttachmentStore,
  WebhookSender,
} from "@parley/core";
import { createDatabaseClient, createOutboxWaker, type DatabaseClient } from "@parley/db";
import { attachmentStoreOptionsFrom } from "@parley/worker";
import type { Express } from "express";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { createApp } from "./app.js";
import { ImageSlots } from "./attachments/image-slots.js";
import type { Config } from "./config.js";
import type { AppContext } from "./context.js";
import { answerClientError } from "./http/client-error.js";
import { createExpressServer } from "./http/express-server.js";
import { gracefulCloser } from "./http/graceful-close.js";
import { ApiKeyCache, listenForRevocations } from "./http/key-cache.js";
import { createApiMetrics, metricsServer } from "./http/metrics.js";
import { CursorCodec } from "./http/pagination.js";
import { RateLimitCounter } from "./http/rate-limit.js";
import { RequestRelay } from "./http/request-relay.js";
import { ReplyHub } from "./webchat/reply-hub.js";

export interface RunningApi {
  url: string;
  port: number;
  /** The port of `GET /metrics` when `METRICS_PORT` is set. */
  metricsPort?: number;
  context: AppContext;
  close(): Promise<void>;
}

export async function createAppContext(
  client: DatabaseClient,
  logger: Logger,
  config: Config,
  publicBaseUrl: () => string,
  metricsRegistry?: Registry,
): Promise<AppContext> {
  const cursorSecret = await loadInstanceSecret(client.db, "cursor_signing");
  const replyHub = new ReplyHub(client, logger, {
    perAddress: config.WEBCHAT_STREAMS_PER_ADDRESS,
    perProcess: config.WEBCHAT_STREAMS_PER_PROCESS,
  });
  const metrics = createApiMetrics(client.db, client.pool, metricsRegistry);
  const s3 = attachmentStoreOptionsFrom(config);
  const s3Store = s3 ? await createS3AttachmentStore(s3) : undefined;
  await s3Store?.check();
  return {
    metrics,
    ...(config.METRICS_TOKEN && config.METRICS_PORT === undefined ? { metricsToken: config.METRICS_TOKEN } : {}),
    replyHub,
    db: client.db,
    cursors: new CursorCodec(cursorSecret),
    secretBox: await loadSecretBox(client.db, config),
    contentUrlSecret: await loadInstanceSecret(client.db, CONTENT_URL_SECRET_NAME),
    attachmentStore: s3Store ?? postgresAttachmentStore,
    logger,
    rateLimitPerMinute: config.RATE_LIMIT_PER_MINUTE,
    levers: { groupCommit: config.GROUP_COMMIT, messageTexts: config.MESSAGE_TEXTS },
    rateLimitCounter: new RateLimitCounter(
      client.db,
      { flushMs: config.RATE_LIMIT_FLUSH_MS, flushBatch: config.RATE_LIMIT_FLUSH_BATCH },
      (error) => logger.error({ err: error }, "could not add the rate-limit counts to the database"),
    ),
    apiKeyCache: new ApiKeyCache({ ttlMs: config.API_KEY_CACHE_TTL_MS }),
    eventRetentionDays: config.EVENT_RETENTION_DAYS,
    metaWebhookRateLimitPerMinute: config.META_WEBHOOK_RATE_LIMIT_PER_MINUTE,
    smsWebhookRateLimitPerMinute: config.SMS_WEBHOOK_RATE_LIMIT_PER_MINUTE,
    webchatLimits: {
      sessionsPerAddress: config.WEBCHAT_SESSIONS_PER_MINUTE_PER_ADDRESS,
      sessionsPerChannel: config.WEBCHAT_SESSIONS_PER_MINUTE_PER_CHANNEL,
      messagesPerAddress: config.WEBCHAT_MESSAGES_PER_MINUTE_PER_ADDRESS,
      messagesPerChannel: config.WEBCHAT_MESSAGES_PER_MINUTE_PER_CHANNEL,
      sessionIdleDays: config.WEBCHAT_SESSION_IDLE_DAYS,
    },
    publicBaseUrl,
    webhookSender: new WebhookSender({ blockPrivateAddresses: config.NODE_ENV === "production" }),
    blockPrivateWebhookAddresses: config.NODE_ENV === "production",
    webhookEndpointsPerEnvironment: config.WEBHOOK_ENDPOINTS_PER_ENVIRONMENT,
    images: { maxPixels: config.IMAGE_MAX_PIXELS, slots: new ImageSlots(config.IMAGE_PROCESSING_CONCURRENCY) },
    emailAuthentication: { trustedAuthservId: config.INBOUND_EMAIL_TRUSTED_AUTHSERV_ID },
  };
}

/**
 * The HTTP server with the slow-client bounds of the configuration: headers within
 * `HTTP_HEADERS_TIMEOUT_MS`, the whole request within `HTTP_REQUEST_TIMEOUT_MS` (node
 * answers 408 and closes), idle keep-alive connections closed after
 * `HTTP_KEEP_ALIVE_TIMEOUT_MS`. Node checks the first two every
 * `connectionsCheckingInterval` (30 s by default): checked often enough to hold.
 */
export function createHttpServer(app: Express, config: Config, logger?: Logger): http.Server {
  const server = createExpressServer(app, {
    headersTimeout: config.HTTP_HEADERS_TIMEOUT_MS,
    requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
    connectionsCheckingInterval: Math.min(1_000, Math.ceil(config.HTTP_HEADERS_TIMEOUT_MS / 4)),
  });
  server.keepAliveTimeout = config.HTTP_KEEP_ALIVE_TIMEOUT_MS;
  // Node's own 400, 408 and 431 carry a request id and the error body too (http/client-error.ts).
  if (logger) server.on("clientError", answerClientError(config.RATE_LIMIT_PER_MINUTE, logger));
  return server;
}

/** Listens on `PORT`; the database must already be migrated. */
export async function startApi(
  databaseUrl: string,
  config: Config,
  logger: Logger,
  hooks: {
    onChangeCommitted?: () => void;
    /** The process's metrics registry, shared with a worker in the same process. */
    metricsRegistry?: Registry;
    /**
     * Open every connection of the pool before listening (main.ts): the first requests after
     * a start find them ready. Tests' servers, a hundred on one PostgreSQL, open them as needed.
     */
    openPoolAtStart?: boolean;
  } = {},
): Promise<RunningApi> {
  const client = createDatabaseClient(databaseUrl, {
    max: config.DATABASE_POOL_SIZE,
    prepare: config.DATABASE_PREPARED_STATEMENTS,
  });
  if (hooks.openPoolAtStart) {
    await client.open().catch(async (error: unknown) => {
      await client.close();
      throw error;
    });
  }
  let baseUrl = config.PUBLIC_BASE_URL ?? `http://localhost:${config.PORT}`;
  const context = await createAppContext(client, logger, config, () => baseUrl, hooks.metricsRegistry);
  // A key dropped before `admin reseal-secrets` ran: this start is refused (one line), while
  // the processes still holding that key keep working.
  await assertSealedSecretsOpen(client.db, context.secretBox).catch(async (error: unknown) => {
    await client.close();
    throw error;
  });
  // What a transaction pooler cannot carry (session settings, LISTEN) goes straight to the database.
  const directUrl = config.DATABASE_DIRECT_URL ?? databaseUrl;
  // Without a worker in this process, the relays of the worker processes are told by NOTIFY.
  const waker = hooks.onChangeCommitted
    ? undefined
    : createOutboxWaker(directUrl, (error) => logger.warn({ err: error }, "could not wake the outbox relays"));
  context.onChangeCommitted = hooks.onChangeCommitted ?? waker?.wake;
  const server = createHttpServer(createApp(context), config, logger).listen(config.PORT, config.HOST);
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  // Once the server listens (a start that fails leaves no connection behind). Until the
  // LISTEN holds, the key cache serves nothing: every request reads its key.
  const revocations = context.apiKeyCache ? listenForRevocations(directUrl, context.apiKeyCache, logger) : undefined;
  if (config.RELAY_IN_REQUEST) {
    context.requestRelay = new RequestRelay();
    void context.requestRelay.watchQueue(client.sql, (error) =>
      logger.warn({ err: error }, "could not look for the job queue's schema"),
    );
  }
  const closeServer = gracefulCloser(server);
  const metricsListener =
    config.METRICS_PORT === undefined || !context.metrics
      ? undefined
      : await metricsServer(context.metrics, config.METRICS_TOKEN, config.METRICS_PORT, config.METRICS_HOST, logger);
  let shuttingDown = false;
  context.shuttingDown = () => shuttingDown;
  const port = (server.address() as AddressInfo).port;
  if (!config.PUBLIC_BASE_URL) baseUrl = `http://localhost:${port}`;
  return {
    url: `${baseUrl}/v1`,
    port,
    ...(metricsListener ? { metricsPort: metricsListener.port } : {}),
    context,
    close: async () => {
      // Not ready first: load balancers probing /readyz stop sending traffic while it still flows.
      shuttingDown = true;
      if (config.SHUTDOWN_DRAIN_MS > 0) await new Promise((resolve) => setTimeout(resolve, config.SHUTDOWN_DRAIN_MS));
      const closed = closeServer();
      // Event streams never end by themselves: ended here, so the server can close.
      context.replyHub.close();
      await closed;
      await metricsListener?.close();
      await waker?.close();
      await revocations?.close();
      context.requestRelay?.close();
      await context.rateLimitCounter.close().catch((error: unknown) => {
        logger.warn({ err: error }, "could not add the last rate-limit counts to the database");
      });
      await client.close();
    },
  };
}
