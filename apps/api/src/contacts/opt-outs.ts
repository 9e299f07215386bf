import { apiTimestamp } from "@parley/core";
import { inTenant, smsOptOuts } from "@parley/db";
import type { api, OperationInput, OptOut } from "@parley/schema";
import { and, desc, eq } from "drizzle-orm";
import type { AppContext } from "../context.js";
import { notFound } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { afterPosition, listKeyOf, toPage } from "../http/pagination.js";
import { findContact } from "./queries.js";

type ListQuery = OperationInput<typeof api.contacts.optOuts>["query"];

function serializeOptOut(row: typeof smsOptOuts.$inferSelect): OptOut {
  return {
    object: "opt_out",
    id: row.id,
    contact_id: row.contactId,
    channel_id: row.channelId,
    keyword: row.keyword,
    created_at: apiTimestamp(row.createdAt),
  };
}

/** `GET /contacts/{id}/opt-outs`: the SMS channels the contact texted STOP to, newest first. */
export async function listOptOutsPage(app: AppContext, tenant: Tenant, contactId: string, query: ListQuery) {
  const contact = await findContact(app.db, tenant, contactId);
  if (!contact) throw notFound("contact", contactId);
  const listKey = listKeyOf("contacts.opt_outs.list", tenant, contact.id);
  const after = app.cursors.decode(listKey, query.after);
  const rows = await app.db
    .select()
    .from(smsOptOuts)
    .where(and(inTenant(smsOptOuts, tenant), eq(smsOptOuts.contactId, contact.id), afterPosition(smsOptOuts, after)))
    .orderBy(desc(smsOptOuts.createdAt), desc(smsOptOuts.id))
    .limit(query.limit + 1);
  return toPage(rows, query.limit, { codec: app.cursors, listKey }, (page) => page.map(serializeOptOut));
}
