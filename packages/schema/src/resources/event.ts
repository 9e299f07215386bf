import { z } from "zod";
import { environment, timestamp } from "../primitives.js";
import { channel } from "./channel.js";
import { contact } from "./contact.js";
import { conversation } from "./conversation.js";
import { type EventType, eventTypes } from "./event-types.js";
import { message } from "./message.js";
import { tag } from "./tag.js";

export { type EventType, eventTypes };

/** What each event's `data` holds: resources identical in shape to what GET returns. */
export const eventData = {
  "message.received": z.object({ message, conversation }),
  "message.sent": z.object({ message, conversation }),
  "message.delivered": z.object({ message, conversation }),
  "message.read": z.object({ message, conversation }),
  "message.failed": z.object({ message, conversation }),
  "conversation.created": z.object({ conversation }),
  "conversation.updated": z.object({ conversation }),
  "conversation.assigned": z.object({ conversation }),
  "conversation.closed": z.object({ conversation }),
  "conversation.reopened": z.object({ conversation }),
  "contact.created": z.object({ contact }),
  "contact.updated": z.object({ contact }),
  "tag.added": z.object({ tag, contact }),
  "tag.removed": z.object({ tag, contact }),
  "channel.disconnected": z.object({ channel }),
  "channel.reconnected": z.object({ channel }),
} satisfies Partial<Record<EventType, z.ZodType>>;
export type EventDataMap = { [K in keyof typeof eventData]: z.infer<(typeof eventData)[K]> };
export type RecordedEventType = keyof typeof eventData;

/** `webhook.test` (POST /webhooks/{id}/test): names the endpoint, nothing else. */
export const webhookTestData = z.object({
  webhook_endpoint: z.object({ object: z.literal("webhook_endpoint"), id: z.string() }),
});

/**
 * What a webhook delivery's body is (the spec's envelope): the event without `object`.
 * Each type's `data` is the same schema as the GET of that resource.
 */
function webhookEnvelope<T extends string, D extends z.ZodType>(type: T, data: D) {
  return z.object({
    id: z.string(),
    type: z.literal(type),
    created_at: timestamp,
    environment,
    organization_id: z.string(),
    data,
  });
}

/** Every event type's webhook body, by type: the OpenAPI document's `webhooks`. */
export const webhookEvents = {
  "message.received": webhookEnvelope("message.received", eventData["message.received"]),
  "message.sent": webhookEnvelope("message.sent", eventData["message.sent"]),
  "message.delivered": webhookEnvelope("message.delivered", eventData["message.delivered"]),
  "message.read": webhookEnvelope("message.read", eventData["message.read"]),
  "message.failed": webhookEnvelope("message.failed", eventData["message.failed"]),
  "conversation.created": webhookEnvelope("conversation.created", eventData["conversation.created"]),
  "conversation.updated": webhookEnvelope("conversation.updated", eventData["conversation.updated"]),
  "conversation.assigned": webhookEnvelope("conversation.assigned", eventData["conversation.assigned"]),
  "conversation.closed": webhookEnvelope("conversation.closed", eventData["conversation.closed"]),
  "conversation.reopened": webhookEnvelope("conversation.reopened", eventData["conversation.reopened"]),
  "contact.created": webhookEnvelope("contact.created", eventData["contact.created"]),
  "contact.updated": webhookEnvelope("contact.updated", eventData["contact.updated"]),
  "tag.added": webhookEnvelope("tag.added", eventData["tag.added"]),
  "tag.removed": webhookEnvelope("tag.removed", eventData["tag.removed"]),
  "channel.disconnected": webhookEnvelope("channel.disconnected", eventData["channel.disconnected"]),
  "channel.reconnected": webhookEnvelope("channel.reconnected", eventData["channel.reconnected"]),
  "webhook.test": webhookEnvelope("webhook.test", webhookTestData),
};

/** A webhook delivery's body: a union discriminated by `type`, each with its typed `data`. */
export const webhookEvent = z.discriminatedUnion("type", [
  webhookEvents["message.received"],
  webhookEvents["message.sent"],
  webhookEvents["message.delivered"],
  webhookEvents["message.read"],
  webhookEvents["message.failed"],
  webhookEvents["conversation.created"],
  webhookEvents["conversation.updated"],
  webhookEvents["conversation.assigned"],
  webhookEvents["conversation.closed"],
  webhookEvents["conversation.reopened"],
  webhookEvents["contact.created"],
  webhookEvents["contact.updated"],
  webhookEvents["tag.added"],
  webhookEvents["tag.removed"],
  webhookEvents["channel.disconnected"],
  webhookEvents["channel.reconnected"],
  webhookEvents["webhook.test"],
]);
export type WebhookEvent = z.infer<typeof webhookEvent>;

const stored = { object: z.literal("event") };

/** An event as GET /events returns it: the webhook body with `object: "event"`, discriminated by `type`. */
export const event = z.discriminatedUnion("type", [
  webhookEvents["message.received"].extend(stored),
  webhookEvents["message.sent"].extend(stored),
  webhookEvents["message.delivered"].extend(stored),
  webhookEvents["message.read"].extend(stored),
  webhookEvents["message.failed"].extend(stored),
  webhookEvents["conversation.created"].extend(stored),
  webhookEvents["conversation.updated"].extend(stored),
  webhookEvents["conversation.assigned"].extend(stored),
  webhookEvents["conversation.closed"].extend(stored),
  webhookEvents["conversation.reopened"].extend(stored),
  webhookEvents["contact.created"].extend(stored),
  webhookEvents["contact.updated"].extend(stored),
  webhookEvents["tag.added"].extend(stored),
  webhookEvents["tag.removed"].extend(stored),
  webhookEvents["channel.disconnected"].extend(stored),
  webhookEvents["channel.reconnected"].extend(stored),
  webhookEvents["webhook.test"].extend(stored),
]);
export type Event = z.infer<typeof event>;
