import { sql } from "drizzle-orm";
import { boolean, index, jsonb, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import { createdAt, jsonObject, tenantColumns, timestampMs, updatedAt } from "./columns.js";
import { contacts } from "./contacts.js";
import { organizations, users } from "./organizations.js";

export const channels = pgTable(
  "channels",
  {
    id: text("id").primaryKey(),
    ...tenantColumns(),
    type: text("type", { enum: ["whatsapp", "instagram", "messenger", "email", "webchat", "sms"] }).notNull(),
    name: text("name").notNull(),
    /** `sandbox` in the test environment; the provider adapter's name for live channels. */
    provider: text("provider").notNull(),
    /** Provider credentials and addresses: stored for the adapters, never returned by the API. */
    settings: jsonb("settings").$type<Record<string, unknown>>().notNull().default({}),
    /** The provider's secrets (tokens, app secret, SMTP credentials), encrypted: see `@parley/core` secrets. */
    secretSettings: text("secret_settings"),
    /**
     * The provider's own name for what the channel receives, kept by PostgreSQL from the
     * plain `settings` (never from the sealed ones): the WhatsApp phone number id, the
     * Facebook Page id, the Instagram account id, the inbound email address in lower case,
     * an SMS channel's sender (Twilio: its Messaging Service SID, else its number in E.164
     * or short code; Vonage: its number, digits given `+`, or its sender id). Null for
     * sandboxes and web chat. Inbound traffic (Meta, Twilio and Vonage webhooks, SMTP)
     * finds its channel through it, and one account is connected at most once (unique below).
     */
    providerAccount: text("provider_account").generatedAlwaysAs(
      sql`case
        when provider = 'meta' and type = 'whatsapp' then settings->>'phone_number_id'
        when provider = 'meta' and type = 'messenger' then settings->>'page_id'
        when provider = 'meta' and type = 'instagram' then settings->>'instagram_account_id'
        when provider = 'smtp' and type = 'email' then lower(settings->>'address')
        when provider = 'twilio' and type = 'sms' then coalesce(settings->>'messaging_service_sid', settings->>'from')
        when provider = 'vonage' and type = 'sms' then
          case when settings->>'from' ~ '^[0-9]+$' then '+' || (settings->>'from') else settings->>'from' end
      end`,
    ),
    /**
     * `active`; `needs_attention` when the provider refused the channel's credentials (a
     * Meta token reported expired: code 190), until they are updated; `disconnected` by
     * `pnpm admin disconnect-channel`: nothing is sent or received until reconnected.
     */
    status: text("status", { enum: ["active", "needs_attention", "disconnected"] })
      .notNull()
      .default("active"),
    /** Why the channel is not `active`, in words; null when it is. */
    statusReason: text("status_reason"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("channels_list_idx").on(
      t.organizationId,
      t.environment,
      t.createdAt.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
    uniqueIndex("channels_one_sandbox_per_type_key")
      .on(t.organizationId, t.environment, t.type)
      .where(sql`${t.provider} = 'sandbox'`),
    // Across organizations and environments: two channels receiving the same number's,
    // page's or address's traffic would split it (email addresses compared in lower case).
    uniqueIndex("channels_provider_account_key").on(t.providerAccount, t.type),
    // The latest change of a Meta channel, one probe: the webhook's handshake names no
    // account, and checks its known verify tokens against it (cost independent of the count).
    index("channels_meta_changes_idx")
      .on(t.updatedAt.desc().nullsFirst(), t.id.desc().nullsFirst())
      .where(sql`${t.provider} = 'meta'`),
  ],
);

export const teams = pgTable(
  "teams",
  {
    id: text("id").primaryKey(),
    ...tenantColumns(),
    name: text("name").notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("teams_list_idx").on(
      t.organizationId,
      t.environment,
      t.createdAt.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
  ],
);

export const teamMembers = pgTable(
  "team_members",
  {
    teamId: text("team_id")
      .notNull()
      .references(() => teams.id, { onDelete: "cascade" }),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.teamId, t.userId] }), index("team_members_user_idx").on(t.userId)],
);

export const conversations = pgTable(
  "conversations",
  {
    id: text("id").primaryKey(),
    ...tenantColumns(),
    contactId: text("contact_id")
      .notNull()
      .references(() => contacts.id, { onDelete: "cascade" }),
    /** Null: a manual record whose messages are stored but never delivered. */
    channelId: text("channel_id").references(() => channels.id),
    externalId: text("external_id"),
    /**
     * The contact's address on the channel (WhatsApp id, Messenger or Instagram scoped id,
     * email address), set when the contact wrote first: where replies go.
     */
    recipient: text("recipient"),
    status: text("status", { enum: ["open", "pending", "closed"] })
      .notNull()
      .default("open"),
    assignedUserId: text("assigned_user_id").references(() => users.id, { onDelete: "set null" }),
    teamId: text("team_id").references(() => teams.id, { onDelete: "set null" }),
    metadata: jsonObject("metadata"),
    /** Started by an email whose sender failed authentication (DMARC): never matched to a verified contact's. */
    unverified: boolean("unverified").notNull().default(false),
    closedAt: timestampMs("closed_at"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("conversations_list_idx").on(
      t.organizationId,
      t.environment,
      t.createdAt.desc().nullsFirst(),
      t.id.desc().nullsFirst(),
    ),
    uniqueIndex("conversations_external_id_key")
      .on(t.organizationId, t.environment, t.externalId)
      .where(sql`${t.externalId} is not null`),
    index("conversations_contact_idx").on(t.contactId),
    index("conversations_channel_idx").on(t.channelId),
    index("conversations_recipient_idx").on(t.channelId, t.recipient, t.createdAt.desc().nullsFirst()),
    index("conversations_assigned_user_idx").on(t.assignedUserId),
    index("conversations_team_idx").on(t.teamId),
  ],
);

/** Internal notes: never messages, never delivered. */
export const notes = pgTable(
  "notes",
  {
    id: text("id").primaryKey(),
    ...tenantColumns(),
    conversationId: text("conversation_id")
      .notNull()
      .references(() => conversations.id, { onDelete: "cascade" }),
    body: text("body").notNull(),
    /** The API key that wrote the note: only it may change or delete the note. Null for notes written before authors were recorded. */
    authorKeyId: text("author_key_id"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("notes_conversation_idx").on(t.conversationId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
  ],
);

/**
 * The record that a note was deleted, and by which key: the body goes with the note,
 * who deleted what and when stays (until the conversation itself is deleted).
 */
export const noteDeletions = pgTable(
  "note_deletions",
  {
    noteId: text("note_id").primaryKey(),
    ...tenantColumns(),
    conversationId: text("conversation_id")
      .notNull()
      .references(() => conversations.id, { onDelete: "cascade" }),
    authorKeyId: text("author_key_id"),
    deletedByKeyId: text("deleted_by_key_id").notNull(),
    noteCreatedAt: timestampMs("note_created_at").notNull(),
    deletedAt: timestampMs("deleted_at").notNull().defaultNow(),
  },
  (t) => [index("note_deletions_conversation_idx").on(t.conversationId)],
);
