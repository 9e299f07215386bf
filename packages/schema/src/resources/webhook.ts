import { z } from "zod";
import { environment, timestamp } from "../primitives.js";
import { eventTypes } from "./event.js";

export const webhookEventName = z
  .union([z.enum(eventTypes), z.literal("*")])
  .describe("An event type of the catalogue, or `*` for every type");

export const webhookEndpoint = z.object({
  object: z.literal("webhook_endpoint"),
  id: z.string(),
  url: z.string(),
  description: z.string().nullable(),
  events: z.array(webhookEventName),
  environment,
  enabled: z.boolean(),
  disabled_reason: z.string().nullable().describe("Why Parley disabled the endpoint, when it did"),
  secret: z
    .string()
    .describe("In full only when created (and rotated); `whsec_****` and the last 4 characters afterwards"),
  failure_count: z.number().int().describe("Consecutive events whose delivery failed; re-enabling clears it"),
  created_at: timestamp,
  updated_at: timestamp,
});
export type WebhookEndpoint = z.infer<typeof webhookEndpoint>;

/** A DNS name or an IP address; IPv6 literals in brackets (the URL parser has checked their syntax). */
const urlHost = new RegExp(`${z.regexes.hostname.source}|^\\[[0-9a-fA-F:.]+\\]$`);

const url = z
  .url({ protocol: /^https?$/, hostname: urlHost })
  .max(2048)
  .describe("Absolute http(s) URL that receives the POSTs");
const events = z.array(webhookEventName).min(1).max(50);

export const webhookCreateBody = z.strictObject({
  url,
  description: z.string().max(500).optional(),
  events,
  environment: environment.optional().describe("Ignored: the stored environment is the API key's"),
  enabled: z.boolean().optional(),
});

export const webhookUpdateBody = z.strictObject({
  url: url.optional(),
  description: z.string().max(500).nullable().optional(),
  events: events.optional(),
  enabled: z.boolean().optional().describe("Re-enabling clears the failure counter"),
});

export const webhookDelivery = z.object({
  object: z.literal("webhook_delivery"),
  id: z.string().describe("The `X-Parley-Delivery` of this attempt"),
  endpoint_id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  attempt: z.number().int(),
  status: z.enum(["succeeded", "failed"]),
  response_status: z.number().int().nullable(),
  duration_ms: z.number().int(),
  response_body: z.string().nullable().describe("The first 1 KB of the endpoint's answer"),
  error: z.string().nullable(),
  next_retry_at: timestamp.nullable(),
  created_at: timestamp,
});
export type WebhookDelivery = z.infer<typeof webhookDelivery>;
