import { EventEmitter } from "node:events";
import {
  closeSmtpTransports,
  defaultMetaOptions,
  defaultTwilioOptions,
  defaultVonageOptions,
  type MetaOptions,
  type SandboxOptions,
  type TwilioOptions,
  type VonageOptions,
} from "@parley/channels";
import {
  assertSealedSecretsOpen,
  CONTENT_URL_SECRET_NAME,
  createS3AttachmentStore,
  listenFailure,
  loadInstanceSecret,
  loadSecretBox,
  postgresAttachmentStore,
  relayBothOnce,
  type S3StoreOptions,
  type SecretsEnv,
  WebhookSender,
  withoutQueryParameters,
} from "@parley/core";
import { createDatabaseClient, OUTBOX_WAKE_CHANNEL } from "@parley/db";
import { Logger as GraphileLogger, run, type Task, type TaskList, type WorkerEvents } from "graphile-worker";
import { type Logger, pino } from "pino";
import postgres from "postgres";
import type { Registry } from "prom-client";
import type { WorkerContext } from "./context.js";
import { ChannelPace } from "./delivery/channel-pace.js";
import { type InboundSmtpOptions, startInboundSmtp } from "./inbound-smtp/server.js";
import { closeJobQueuePool, createJobQueuePool, openJobQueuePool, openJobQueueUtils } from "./job-queue-pool.js";
import { withJobSpan } from "./job-span.js";
import { startLiveness } from "./liveness/heartbeats.js";
import { startMetricsServer, WorkerMetrics } from "./metrics.js";
import { startOutboxRelay } from "./relay/outbox-relay.js";
import { superviseRunner } from "./runner-supervisor.js";
import { applyReceipt } from "./tasks/apply-receipt.js";
import { cleanupExpired } from "./tasks/cleanup-expired.js";
import { deliverMessage } from "./tasks/deliver-message.js";
import { deliverWebhook } from "./tasks/deliver-webhook.js";
import { receiveMetaWebhook } from "./tasks/receive-meta-webhook.js";
import { receiveTwilioWebhook } from "./tasks/receive-twilio-webhook.js";
import { receiveVonageWebhook } from "./tasks/receive-vonage-webhook.js";
import { removeAttachmentObjects } from "./tasks/remove-attachment-objects.js";
import { defaultEndpointLimits, EndpointSlots } from "./webhooks/endpoint-slots.js";

export { relayBothOnce } from "@parley/core";
export { collectProcessMetrics, messageStatusCounter, registerPoolGauges } from "./metrics.js";
export { DELIVERY_MAX_ATTEMPTS } from "./tasks/deliver-message.js";

const crontab = "*/5 * * * * cleanup_expired";

/** How long a stopped runner's connections may take to close before they are left to close alone. */
const CLOSE_JOB_QUEUE_POOL_MS = 5_000;

/**
 * How often a relay looks at its outbox when nothing wakes it. Writers wake the relays
 * (see startOutboxRelay), so the poll only bounds the wait after a wake-up was lost; a
 * shorter one costs an empty pass (a statement in the worker and in PostgreSQL) each time.
 */
const RELAY_POLL_MS = 500;

export interface WorkerOptions {
  connectionString: string;
  /**
   * `DATABASE_DIRECT_URL`: the database itself (or a session pool) when `connectionString`
   * is a transaction pooler. graphile-worker (LISTEN, session locks) and the outbox wake-up
   * LISTEN use it; the tasks' queries go through `connectionString`.
   */
  directConnectionString?: string;
  /** `DATABASE_PREPARED_STATEMENTS=false`: no named statements (PgBouncer before 1.21 in transaction mode). */
  preparedStatements?: boolean;
  logger: Logger;
  /** The public address of the API, without `/v1`. */
  publicBaseUrl: string;
  concurrency?: number;
  sandbox?: Partial<SandboxOptions>;
  /** How often the outbox relays look for new rows when nothing wakes them (default 500 ms). */
  relayPollMs?: number;
  heartbeatIntervalMs?: number;
  /** A worker silent this long is taken for dead and its jobs are released. */
  heartbeatTimeoutMs?: number;
  /** Production: webhook deliveries refuse non-public addresses when connecting. */
  blockPrivateWebhookAddresses?: boolean;
  /** `PARLEY_WEBHOOK_FAST_RETRY=1`: the retry schedule in seconds instead of minutes. */
  webhookFastRetry?: boolean;
  /**
   * Webhook deliveries to one endpoint this worker runs at once (`WEBHOOK_CONCURRENCY_PER_ENDPOINT`),
   * and to one whose last attempt was slow (`WEBHOOK_CONCURRENCY_PER_SLOW_ENDPOINT`): by
   * default all slots but a fifth, and a fifth, so no endpoint holds every slot.
   */
  webhookConcurrencyPerEndpoint?: number;
  webhookConcurrencyPerSlowEndpoint?: number;
  /** Meta's Graph API address and version (`META_GRAPH_BASE_URL`, `META_GRAPH_API_VERSION`). */
  meta?: Partial<MetaOptions>;
  /** Twilio's REST API address (`TWILIO_API_BASE_URL`, `TWILIO_TIMEOUT_MS`). */
  twilio?: Partial<TwilioOptions>;
  /** Vonage's Messages API address (`VONAGE_API_BASE_URL`, `VONAGE_TIMEOUT_MS`). */
  vonage?: Partial<VonageOptions>;
  /** `PARLEY_SECRETS_KEY`, `PARLEY_SECRETS_KEY_PREVIOUS` and `NODE_ENV`: how channel secrets are opened. */
  secrets?: SecretsEnv;
  /** Inbound email over SMTP (`SMTP_INBOUND_PORT`): off when absent. */
  smtpInbound?: InboundSmtpOptions;
  /** `WORKER_METRICS_PORT`/`WORKER_METRICS_HOST`: serves `GET /metrics` (Prometheus); off when absent. */
  metrics?: { port: number; host?: string };
  /**
   * The process's metrics registry when the worker shares its process with an API
   * (`pnpm start`): the API's `/metrics` then serves the worker's families too.
   */
  metricsRegistry?: Registry;
  /** `EVENT_RETENTION_DAYS`: how long events and webhook delivery records are kept (30). */
  eventRetentionDays?: number;
  /** `ATTACHMENTS_S3_*`: files in an S3-compatible bucket, as the API stores them; PostgreSQL when absent. */
  attachmentS3?: S3StoreOptions | undefined;
  /**
   * Open every connection of both pools (the tasks' and the job queue's) at the start
   * (main.ts): the first jobs after a start find them ready. Tests' workers open them as needed.
   */
  openPoolsAtStart?: boolean;
}

export interface RunningWorker {
  /** Relays new sends now (a latency hint from an API in the same process). */
  wake(): void;
  /** The port of `GET /metrics`, when `WORKER_METRICS_PORT` is set. */
  metricsPort?: number;
  /** The inbound SMTP server's port, when one runs. */
  smtpPort?: number;
  /** Finishes the jobs in hand, releases the rest, then resolves. */
  stop(): Promise<void>;
}

/** Creates or updates graphile-worker's schema, as a worker's start does: for an API's tests, before any worker ran. */
export async function installJobQueue(
  connectionString: string,
  logger: Logger = pino({ level: "silent" }),
): Promise<void> {
  const { utils, release } = await openJobQueueUtils(connectionString, logger, { waitMs: CLOSE_JOB_QUEUE_POOL_MS });
  try {
    await utils.migrate();
  } finally {
    await release();
  }
}

export const defaultSandboxOptions: SandboxOptions = { deliveryDelayMs: 500, readDelayMs: 1000 };

/**
 * The tasks. Those that record events (a message's status changes, inbound messages) wake
 * the relays when they end, so the events' webhooks leave at once instead of at the next
 * poll; a webhook delivery records none (but for the rare disabling of an endpoint, which
 * the poll picks up), so its jobs cost no extra relay pass.
 */
export function createTaskList(context: WorkerContext, wakeRelays: () => void = () => {}): TaskList {
  const thenWake =
    (task: Task): Task =>
    async (payload, helpers) => {
      try {
        return await task(payload, helpers);
      } finally {
        wakeRelays();
      }
    };
  const tasks: Record<string, Task> = {
    deliver_message: thenWake(deliverMessage(context)),
    deliver_webhook: deliverWebhook(context),
    apply_receipt: thenWake(applyReceipt(context)),
    receive_meta_webhook: thenWake(receiveMetaWebhook(context)),
    receive_twilio_webhook: thenWake(receiveTwilioWebhook(context)),
    receive_vonage_webhook: thenWake(receiveVonageWebhook(context)),
    cleanup_expired: cleanupExpired({
      eventRetentionDays: context.eventRetentionDays ?? 30,
      removesObjects: Boolean(context.keys.attachmentStore.remove),
    }),
    remove_attachment_objects: removeAttachmentObjects(context),
  };
  // A span per job (tracing on; see job-span.ts).
  return Object.fromEntries(Object.entries(tasks).map(([name, task]) => [name, withJobSpan(name, task)]));
}

function graphileLogger(logger: Logger) {
  return new GraphileLogger((scope) => (level, message, meta) => {
    const child = logger.child({ component: "worker", ...scope });
    const method = level === "error" ? "error" : level === "warning" ? "warn" : "debug";
    // Its messages quote a failed job's error, stack included (see withoutQueryParameters).
    child[method](withoutPayloads(meta), withoutQueryParameters(message));
  });
}

/**
 * graphile-worker logs whole jobs, payload included: a provider webhook's payload holds
 * message bodies and names. Only the job's identity is kept.
 */
function withoutPayloads(meta: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!meta) return {};
  const { job, ...rest } = meta as { job?: Record<string, unknown> };
  if (!job || typeof job !== "object") return rest;
  return { ...rest, job: { id: job.id, task_identifier: job.task_identifier, attempts: job.attempts } };
}

/**
 * graphile-worker locks jobs under its worker pool's id (`locked_by`), not under the ids
 * of the pool's workers, and creates the pool before `run` resolves: the heartbeat follows
 * the pool, through an emitter handed to `run`.
 */
function poolEvents(onPool: (poolId: string) => void): WorkerEvents {
  const events = new EventEmitter() as WorkerEvents;
  events.on("pool:create", ({ workerPool }) => onPool(workerPool.id));
  return events;
}

export async function startWorker(options: WorkerOptions): Promise<RunningWorker> {
  const concurrency = options.concurrency ?? 10;
  // The bucket is checked first: a start that cannot work leaves nothing open.
  const s3Store = options.attachmentS3 ? await createS3AttachmentStore(options.attachmentS3) : undefined;
  await s3Store?.check().catch((error: unknown) => {
    s3Store.close();
    throw error;
  });
  // One connection per job that may run at once, so no job waits for a connection another holds.
  const client = createDatabaseClient(options.connectionString, {
    max: Math.max(5, concurrency),
    prepare: options.preparedStatements ?? true,
  });
  if (options.openPoolsAtStart) {
    await client.open().catch(async (error: unknown) => {
      s3Store?.close();
      await client.close();
      throw error;
    });
  }
  const directUrl = options.directConnectionString ?? options.connectionString;
  const defaultLimits = defaultEndpointLimits(concurrency);
  const webhookSlots = new EndpointSlots({
    perEndpoint: options.webhookConcurrencyPerEndpoint ?? defaultLimits.perEndpoint,
    perSlowEndpoint: options.webhookConcurrencyPerSlowEndpoint ?? defaultLimits.perSlowEndpoint,
  });
  const secretBox = await loadSecretBox(client.db, options.secrets ?? {});
  // A key dropped before `admin reseal-secrets` ran: this start is refused (one line), while
  // the processes still holding that key keep working.
  await assertSealedSecretsOpen(client.db, secretBox).catch(async (error: unknown) => {
    await client.close();
    throw error;
  });
  const context: WorkerContext = {
    db: client.db,
    logger: options.logger,
    publicBaseUrl: options.publicBaseUrl,
    adapters: {
      sandbox: { ...defaultSandboxOptions, ...options.sandbox },
      meta: { ...defaultMetaOptions, ...options.meta },
      twilio: { ...defaultTwilioOptions, ...options.twilio },
      vonage: { ...defaultVonageOptions, ...options.vonage },
      publicBaseUrl: options.publicBaseUrl,
    },
    keys: {
      secretBox,
      contentUrlSecret: await loadInstanceSecret(client.db, CONTENT_URL_SECRET_NAME),
      attachmentStore: s3Store ?? postgresAttachmentStore,
    },
    webhookSender: new WebhookSender({ blockPrivateAddresses: options.blockPrivateWebhookAddresses ?? false }),
    webhookFastRetry: options.webhookFastRetry ?? false,
    webhookSlots,
    channelPace: new ChannelPace(),
    eventRetentionDays: options.eventRetentionDays ?? 30,
    metrics: new WorkerMetrics(client.db, client.pool, options.metricsRegistry),
  };
  const logger = graphileLogger(options.logger);
  const { utils, release: releaseUtils } = await openJobQueueUtils(directUrl, options.logger, {
    waitMs: CLOSE_JOB_QUEUE_POOL_MS,
    jobQueueLogger: logger,
  });
  const liveness = startLiveness(client.sql, options.logger, {
    intervalMs: options.heartbeatIntervalMs ?? 5_000,
    timeoutMs: options.heartbeatTimeoutMs ?? 30_000,
    forceUnlock: (lockerIds) => utils.forceUnlockWorkers(lockerIds),
  });
  let latestPoolId = "";
  const events = poolEvents((poolId) => {
    latestPoolId = poolId;
    liveness.track(poolId);
  });
  // The relays start once the runner does; until then a task has nothing to wake.
  let wakeRelays = () => {};
  let runner: { stop(): Promise<void> };
  try {
    runner = await superviseRunner({
      start: async () => {
        const pgPool = createJobQueuePool(directUrl, options.logger);
        if (options.openPoolsAtStart) {
          await openJobQueuePool(pgPool).catch(async (error: unknown) => {
            await closeJobQueuePool(pgPool, CLOSE_JOB_QUEUE_POOL_MS);
            throw error;
          });
        }
        const started = await run({
          pgPool,
          concurrency,
          taskList: createTaskList(context, () => wakeRelays()),
          // Jobs of endpoints at their cap wait in the queue instead of taking a slot.
          forbiddenFlags: () => webhookSlots.full(),
          crontab,
          noHandleSignals: true,
          logger,
          events,
          // Unbatched, graphile-worker records a job's success or failure without awaiting it,
          // and `stop()` closes its database pool under that write: a job finished during a
          // graceful shutdown stayed locked for 4 hours. Batched (with no delay), `stop()`
          // waits for the pending writes.
          preset: { worker: { completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
        }).catch(async (error: unknown) => {
          await closeJobQueuePool(pgPool, CLOSE_JOB_QUEUE_POOL_MS);
          throw error;
        });
        return {
          runner: started,
          poolId: latestPoolId,
          close: () => closeJobQueuePool(pgPool, CLOSE_JOB_QUEUE_POOL_MS),
        };
      },
      events,
      release: (poolId) => utils.forceUnlockWorkers([poolId]),
      forget: (poolId) => liveness.forget(poolId),
      logger: options.logger,
    });
  } catch (error) {
    await liveness.stop();
    await releaseUtils();
    await client.close();
    throw error;
  }
  const smtp = options.smtpInbound
    ? await startInboundSmtp(context, options.smtpInbound).catch(async (error: unknown) => {
        await runner.stop();
        await liveness.stop();
        await releaseUtils();
        await context.webhookSender.close();
        await client.close();
        const { port, host = "0.0.0.0" } = options.smtpInbound ?? { port: 0 };
        throw listenFailure(error, { variable: "SMTP_INBOUND_PORT", port, hostVariable: "SMTP_INBOUND_HOST", host });
      })
    : undefined;
  // One loop relays both outboxes (sends and events), one statement a pass.
  const relay = startOutboxRelay(client.sql, options.logger, options.relayPollMs ?? RELAY_POLL_MS, relayBothOnce);
  wakeRelays = () => relay.wake();
  // API processes NOTIFY after a change commits (createOutboxWaker): the relays look at once.
  // Without it (the database refused the LISTEN), the relays still poll.
  // A LISTEN holds its connection: through a transaction pooler it would hear nothing.
  const listenSql =
    directUrl === options.connectionString ? client.sql : postgres(directUrl, { max: 1, onnotice: () => {} });
  const wakeListener = await listenSql
    .listen(OUTBOX_WAKE_CHANNEL, () => wakeRelays())
    .catch((error: unknown) => {
      options.logger.warn({ err: error }, "could not listen for outbox wake-ups; the relays poll");
      return undefined;
    });
  const metricsServer = options.metrics
    ? await startMetricsServer(
        context.metrics as WorkerMetrics,
        options.metrics.port,
        options.metrics.host ?? "127.0.0.1",
      )
    : undefined;
  return {
    wake: () => wakeRelays(),
    ...(smtp ? { smtpPort: smtp.port } : {}),
    ...(metricsServer ? { metricsPort: metricsServer.port } : {}),
    stop: async () => {
      await metricsServer?.close();
      await smtp?.close();
      await wakeListener?.unlisten().catch(() => {});
      if (listenSql !== client.sql) await listenSql.end({ timeout: 2 });
      await relay.stop();
      await runner.stop();
      await liveness.stop();
      await releaseUtils();
      await context.webhookSender.close();
      closeSmtpTransports();
      s3Store?.close();
      await client.close();
    },
  };
}
export {
  attachmentStoreFields,
  attachmentStoreOptionsFrom,
  loadWorkerConfig,
  parseWorkerConfig,
  smsProviderOptionsFrom,
  type WorkerConfig,
  workerOptionsFrom,
} from "./config.js";
