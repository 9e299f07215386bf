import type { AdapterOptions } from "@parley/channels";
import type { DeliveryKeys, WebhookSender } from "@parley/core";
import type { Database } from "@parley/db";
import type { Logger } from "pino";
import type { ChannelPace } from "./delivery/channel-pace.js";
import type { WorkerMetrics } from "./metrics.js";
import type { EndpointSlots } from "./webhooks/endpoint-slots.js";

/** What every task needs, built once when the worker starts. */
export interface WorkerContext {
  db: Database;
  logger: Logger;
  /** The public address of the API, without `/v1`: attachment URLs in event data. */
  publicBaseUrl: string;
  adapters: AdapterOptions;
  /** Opens channel secrets and signs the file links given to providers. */
  keys: DeliveryKeys;
  webhookSender: WebhookSender;
  /** `PARLEY_WEBHOOK_FAST_RETRY=1`: the retry schedule in seconds instead of minutes. */
  webhookFastRetry: boolean;
  /** Paces this worker's sends on each channel to its provider's rate. */
  channelPace: ChannelPace;
  /** The per-endpoint cap on concurrent webhook deliveries of this worker. */
  webhookSlots: EndpointSlots;
  /** This worker's Prometheus metrics (metrics.ts). */
  metrics?: WorkerMetrics;
  /** `EVENT_RETENTION_DAYS`: events and webhook delivery records are removed after this (30). */
  eventRetentionDays?: number;
}
