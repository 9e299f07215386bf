import { sql } from "drizzle-orm";
import { bigserial, boolean, customType, index, integer, jsonb, pgTable, text, uniqueIndex } from "drizzle-orm/pg-core";
import { createdAt, jsonObject, tenantColumns, timestampMs, updatedAt } from "./columns.js";
import { conversations } from "./conversations.js";

/** The shape of `messages.authentication` (the catalogue's `EmailAuthentication`; db imports no schema). */
export interface EmailAuthenticationColumn {
  verified: boolean;
  dmarc: string;
  spf: string;
  dkim: string;
  evaluated_by: string;
}

const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => "bytea" });

export const attachments = pgTable(
  "attachments",
  {
    id: text("id").primaryKey(),
    ...tenantColumns(),
    filename: text("filename").notNull(),
    contentType: text("content_type").notNull(),
    size: integer("size").notNull(),
    /** A file used by a message is kept for as long as the message; others expire. */
    retained: boolean("retained").notNull().default(false),
    expiresAt: timestampMs("expires_at").notNull(),
    createdAt: createdAt(),
  },
  (t) => [index("attachments_expiry_idx").on(t.expiresAt).where(sql`${t.retained} = false`)],
);

/**
 * The bytes, apart from the metadata: the default attachment store, shared by every process.
 * `data` is stored out of line uncompressed (`STORAGE EXTERNAL`, migration 0026).
 */
export const attachmentContents = pgTable("attachment_contents", {
  attachmentId: text("attachment_id")
    .primaryKey()
    .references(() => attachments.id, { onDelete: "cascade" }),
  data: bytea("data").notNull(),
});

export const messages = pgTable(
  "messages",
  {
    id: text("id").primaryKey(),
    ...tenantColumns(),
    conversationId: text("conversation_id")
      .notNull()
      .references(() => conversations.id, { onDelete: "cascade" }),
    direction: text("direction", { enum: ["inbound", "outbound"] }).notNull(),
    type: text("type", { enum: ["text", "image", "video", "audio", "document", "template"] }).notNull(),
    text: text("text"),
    attachmentId: text("attachment_id").references(() => attachments.id),
    metadata: jsonObject("metadata"),
    /** Null for inbound messages and manual records: never a state that was not observed. */
    status: text("status", { enum: ["queued", "sent", "delivered", "read", "failed"] }),
    errorCode: text("error_code"),
    errorMessage: text("error_message"),
    /** The channel provider's id, for matching its receipts. */
    providerMessageId: text("provider_message_id"),
    /** Inbound email: the SPF, DKIM and DMARC verdict (the API's `authentication`); null otherwise. */
    authentication: jsonb("authentication").$type<EmailAuthenticationColumn>(),
    /** Outbound SMS text: the parts carriers send it in and their encoding (the API's `sms`); null otherwise. */
    smsSegments: integer("sms_segments"),
    smsEncoding: text("sms_encoding", { enum: ["GSM-7", "UCS-2"] }),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("messages_conversation_idx").on(t.conversationId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    // Where a session window starts: the newest inbound message of a conversation, read
    // for every delivery, in one index probe however long the conversation is.
    index("messages_inbound_idx")
      .on(t.conversationId, t.createdAt.desc().nullsFirst(), t.id)
      .where(sql`${t.direction} = 'inbound'`),
    // Partial: most messages carry no attachment, and an outbound one has no provider id
    // until it is sent; every send inserted two index entries that nothing looks up
    // (a look-up by either column, `= $1`, implies it is not null and uses them).
    index("messages_attachment_idx").on(t.attachmentId).where(sql`${t.attachmentId} is not null`),
    index("messages_provider_id_idx").on(t.providerMessageId).where(sql`${t.providerMessageId} is not null`),
    // A provider retries its webhooks: an inbound message is stored once per provider id.
    uniqueIndex("messages_inbound_provider_id_key")
      .on(t.organizationId, t.environment, t.providerMessageId)
      .where(sql`${t.direction} = 'inbound' and ${t.providerMessageId} is not null`),
  ],
);

/**
 * The delivery outbox: one row per accepted send, written in the send's transaction.
 * A relay in the worker turns rows into delivery jobs in batches, so a send never waits
 * on the job queue's NOTIFY.
 */
export const messageOutbox = pgTable("message_outbox", {
  id: bigserial("id", { mode: "number" }).primaryKey(),
  messageId: text("message_id")
    .notNull()
    .references(() => messages.id, { onDelete: "cascade" }),
  /** The W3C `traceparent` of the send's request (tracing on): the relay puts it in the job, whose span continues that trace. */
  traceparent: text("traceparent"),
  createdAt: createdAt(),
});
