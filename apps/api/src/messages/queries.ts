import { attachments, inTenant, messageOutbox, messages, type Queryable, type TenantScope } from "@parley/db";
import { and, desc, eq, gte, lt } from "drizzle-orm";
import { afterPosition, type KeysetPosition } from "../http/pagination.js";

export type MessageRow = typeof messages.$inferSelect;
export type NewMessageRow = typeof messages.$inferInsert;

export interface MessageFilters {
  direction?: "inbound" | "outbound" | undefined;
  createdAfter?: Date | undefined;
  createdBefore?: Date | undefined;
}

export async function listConversationMessages(
  db: Queryable,
  tenant: TenantScope,
  conversationId: string,
  filters: MessageFilters,
  limit: number,
  after?: KeysetPosition,
) {
  return db
    .select()
    .from(messages)
    .where(
      and(
        inTenant(messages, tenant),
        eq(messages.conversationId, conversationId),
        afterPosition(messages, after),
        filters.direction ? eq(messages.direction, filters.direction) : undefined,
        filters.createdAfter ? gte(messages.createdAt, filters.createdAfter) : undefined,
        filters.createdBefore ? lt(messages.createdAt, filters.createdBefore) : undefined,
      ),
    )
    .orderBy(desc(messages.createdAt), desc(messages.id))
    .limit(limit + 1);
}

export async function findMessage(db: Queryable, tenant: TenantScope, id: string) {
  const [row] = await db
    .select()
    .from(messages)
    .where(and(inTenant(messages, tenant), eq(messages.id, id)));
  return row;
}

export async function insertMessage(db: Queryable, row: NewMessageRow) {
  const [inserted] = await db.insert(messages).values(row).returning();
  if (!inserted) throw new Error("message insert returned nothing");
  return inserted;
}

/** The delivery outbox row, in the send's own transaction: a delivery cannot be lost. */
export async function enqueueDelivery(db: Queryable, messageId: string) {
  await db.insert(messageOutbox).values({ messageId });
}

export async function retainAttachment(db: Queryable, attachmentId: string) {
  await db.update(attachments).set({ retained: true }).where(eq(attachments.id, attachmentId));
}
