import {
  channels,
  contacts,
  contactTags,
  conversations,
  inTenant,
  inTenantPlaceholders,
  type Queryable,
  reusableQuery,
  type TenantScope,
} from "@parley/db";
import type { ChannelStatus, ChannelType, ConversationStatus } from "@parley/schema";
import { and, desc, eq, gte, lt, type SQL, sql } from "drizzle-orm";
import { afterPosition, type KeysetPosition } from "../http/pagination.js";

export type ConversationRow = typeof conversations.$inferSelect;
export type NewConversationRow = typeof conversations.$inferInsert;
export interface ConversationWithChannel {
  conversation: ConversationRow;
  channelType: ChannelType | null;
  /** Null on a manual record; a `disconnected` channel sends and receives nothing. */
  channelStatus: ChannelStatus | null;
  /** The channel's plain settings (never its secrets): what narrows its capabilities. */
  channelSettings: Record<string, unknown> | null;
}

export interface ConversationFilters {
  status?: ConversationStatus | undefined;
  channelId?: string | undefined;
  channelType?: ChannelType | undefined;
  contactId?: string | undefined;
  assignedTo?: string | undefined;
  teamId?: string | undefined;
  tagId?: string | undefined;
  externalId?: string | undefined;
  createdAfter?: Date | undefined;
  createdBefore?: Date | undefined;
  updatedAfter?: Date | undefined;
  updatedBefore?: Date | undefined;
}

function filterConditions(filters: ConversationFilters): (SQL | undefined)[] {
  return [
    filters.status ? eq(conversations.status, filters.status) : undefined,
    filters.channelId ? eq(conversations.channelId, filters.channelId) : undefined,
    filters.channelType ? eq(channels.type, filters.channelType) : undefined,
    filters.contactId ? eq(conversations.contactId, filters.contactId) : undefined,
    filters.assignedTo ? eq(conversations.assignedUserId, filters.assignedTo) : undefined,
    filters.teamId ? eq(conversations.teamId, filters.teamId) : undefined,
    filters.tagId
      ? sql`exists (select 1 from ${contactTags} where ${contactTags.contactId} = ${conversations.contactId} and ${contactTags.tagId} = ${filters.tagId})`
      : undefined,
    filters.externalId ? eq(conversations.externalId, filters.externalId) : undefined,
    filters.createdAfter ? gte(conversations.createdAt, filters.createdAfter) : undefined,
    filters.createdBefore ? lt(conversations.createdAt, filters.createdBefore) : undefined,
    filters.updatedAfter ? gte(conversations.updatedAt, filters.updatedAfter) : undefined,
    filters.updatedBefore ? lt(conversations.updatedAt, filters.updatedBefore) : undefined,
  ];
}

function selectWithChannel(db: Queryable) {
  return db
    .select({
      conversation: conversations,
      channelType: channels.type,
      channelStatus: channels.status,
      channelSettings: channels.settings,
    })
    .from(conversations)
    .leftJoin(channels, eq(channels.id, conversations.channelId));
}

export async function listConversations(
  db: Queryable,
  tenant: TenantScope,
  filters: ConversationFilters,
  limit: number,
  after?: KeysetPosition,
) {
  const rows = await selectWithChannel(db)
    .where(and(inTenant(conversations, tenant), afterPosition(conversations, after), ...filterConditions(filters)))
    .orderBy(desc(conversations.createdAt), desc(conversations.id))
    .limit(limit + 1);
  // The keyset position of each row, for the cursor.
  return rows.map((row) => ({ ...row, createdAt: row.conversation.createdAt, id: row.conversation.id }));
}

/**
 * `update` holds the conversation for a change; `key share` only keeps it from being
 * deleted (with its contact) while rows that point to it are inserted.
 */
export type ConversationLock = "update" | "key share";

function selectOneWithChannel(db: Queryable) {
  return selectWithChannel(db).where(
    and(inTenantPlaceholders(conversations), eq(conversations.id, sql.placeholder("id"))),
  );
}

// Notes, empty pages of messages and the conversation routes read a conversation: built once (see reusableQuery).
const findConversationQueries = {
  none: reusableQuery((db) => selectOneWithChannel(db).prepare("find_conversation")),
  update: reusableQuery((db) =>
    selectOneWithChannel(db).for("update", { of: conversations }).prepare("find_conversation_for_update"),
  ),
  "key share": reusableQuery((db) =>
    selectOneWithChannel(db).for("key share", { of: conversations }).prepare("find_conversation_for_key_share"),
  ),
};

export async function findConversation(
  db: Queryable,
  tenant: TenantScope,
  id: string,
  lock?: ConversationLock,
): Promise<ConversationWithChannel | undefined> {
  const [row] = await findConversationQueries[lock ?? "none"](db, { ...tenant, id });
  return row;
}

/**
 * The contact a new conversation points to, held until the transaction ends: a
 * concurrent delete of the contact either waits and then removes the new conversation
 * too, or wins and the contact is simply not found (never a foreign-key failure).
 */
export async function lockContactForConversation(db: Queryable, tenant: TenantScope, contactId: string) {
  const [row] = await db
    .select({ id: contacts.id })
    .from(contacts)
    .where(and(inTenant(contacts, tenant), eq(contacts.id, contactId)))
    .for("key share");
  return row;
}

export async function findConversationByExternalId(db: Queryable, tenant: TenantScope, externalId: string) {
  const [row] = await selectWithChannel(db).where(
    and(inTenant(conversations, tenant), eq(conversations.externalId, externalId)),
  );
  return row;
}

/** Inserts unless the external_id is taken; undefined tells the caller to find the winner. */
export async function insertConversation(db: Queryable, row: NewConversationRow) {
  const [inserted] = await db
    .insert(conversations)
    .values(row)
    .onConflictDoNothing({
      target: [conversations.organizationId, conversations.environment, conversations.externalId],
      where: sql`${conversations.externalId} is not null`,
    })
    .returning();
  return inserted;
}

export async function updateConversationRow(
  db: Queryable,
  tenant: TenantScope,
  id: string,
  changes: Partial<NewConversationRow>,
) {
  const [row] = await db
    .update(conversations)
    .set({ ...changes, updatedAt: new Date() })
    .where(and(inTenant(conversations, tenant), eq(conversations.id, id)))
    .returning();
  if (!row) throw new Error(`conversation ${id} vanished inside its transaction`);
  return row;
}
