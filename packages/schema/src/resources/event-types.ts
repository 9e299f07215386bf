/** The event types of the API, without zod: `@parley/webhook-verify` bundles these types. */
export const eventTypes = [
  "message.received",
  "message.sent",
  "message.delivered",
  "message.read",
  "message.failed",
  "conversation.created",
  "conversation.updated",
  "conversation.assigned",
  "conversation.closed",
  "conversation.reopened",
  "contact.created",
  "contact.updated",
  "tag.added",
  "tag.removed",
  "channel.disconnected",
  "channel.reconnected",
] as const;
export type EventType = (typeof eventTypes)[number];
