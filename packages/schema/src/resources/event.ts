import { z } from "zod";
import { environment, timestamp } from "../primitives.js";
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
} satisfies Partial<Record<EventType, z.ZodType>>;
export type EventDataMap = { [K in keyof typeof eventData]: z.infer<(typeof eventData)[K]> };
export type RecordedEventType = keyof typeof eventData;

export const event = z.object({
  object: z.literal("event"),
  id: z.string(),
  type: z.enum([...eventTypes, "webhook.test"]),
  created_at: timestamp,
  environment,
  organization_id: z.string(),
  data: z.record(z.string(), z.unknown()),
});
export type Event = z.infer<typeof event>;
