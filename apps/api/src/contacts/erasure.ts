import { conversations, inTenant, type Queryable, webchatSessions } from "@parley/db";
import { and, eq, sql } from "drizzle-orm";
import type { Tenant } from "../http/auth.js";
import { deleteContactRow } from "./queries.js";

/**
 * Deletes a contact and every copy of what it held, in the caller's transaction: its row
 * (conversations, messages and notes cascade), its web chat sessions (the visitor's name and
 * email), the events whose data names it or one of its conversations (every event about a
 * contact, conversation or message carries one of those ids), their webhook delivery records
 * and unrelayed outbox rows, and the stored responses of idempotent requests about them.
 * Returns false when there was no such contact.
 */
export async function eraseContact(tx: Queryable, tenant: Tenant, contactId: string): Promise<boolean> {
  const owned = await tx
    .select({ id: conversations.id })
    .from(conversations)
    .where(and(inTenant(conversations, tenant), eq(conversations.contactId, contactId)));
  await tx
    .delete(webchatSessions)
    .where(and(inTenant(webchatSessions, tenant), eq(webchatSessions.contactId, contactId)));
  if (!(await deleteContactRow(tx, tenant, contactId))) return false;

  // Ids are quoted JSON strings wherever they appear: `"con_..."` matches no other id.
  const patterns = sql`array[${sql.join(
    [contactId, ...owned.map((row) => row.id)].map((id) => sql`${`%${JSON.stringify(id)}%`}`),
    sql`, `,
  )}]::text[]`;
  const { organizationId, environment } = tenant;
  await tx.execute(sql`
    with erased as (
      delete from events
      where organization_id = ${organizationId} and environment = ${environment}
        and data::text like any(${patterns})
      returning id
    ), unrelayed as (
      delete from event_outbox where event_id in (select id from erased)
    )
    delete from webhook_deliveries
    where organization_id = ${organizationId} and environment = ${environment}
      and event_id in (select id from erased)`);
  await tx.execute(sql`
    delete from idempotency_keys
    where organization_id = ${organizationId} and environment = ${environment}
      and (response_body #>> '{}') like any(${patterns})`);
  return true;
}
