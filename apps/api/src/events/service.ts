import { serializeEvent } from "@parley/core";
import { events, inTenant } from "@parley/db";
import type { api, Event, OperationInput } from "@parley/schema";
import { and, desc, eq, gte, lt } from "drizzle-orm";
import type { AppContext } from "../context.js";
import { notFound } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { afterPosition, listKeyOf, toPage } from "../http/pagination.js";

type ListQuery = OperationInput<typeof api.events.list>["query"];

/** Events are kept `EVENT_RETENTION_DAYS` (30; the worker's clean-up removes older ones); reads never show older ones. */
function retentionStart(app: AppContext): Date {
  return new Date(Date.now() - (app.eventRetentionDays ?? 30) * 86_400_000);
}

export async function listEventsPage(app: AppContext, tenant: Tenant, query: ListQuery) {
  const listKey = listKeyOf("events.list", tenant);
  const after = app.cursors.decode(listKey, query.after);
  const rows = await app.db
    .select()
    .from(events)
    .where(
      and(
        inTenant(events, tenant),
        gte(events.createdAt, retentionStart(app)),
        query.type ? eq(events.type, query.type) : undefined,
        query.created_after ? gte(events.createdAt, query.created_after) : undefined,
        query.created_before ? lt(events.createdAt, query.created_before) : undefined,
        afterPosition(events, after),
      ),
    )
    .orderBy(desc(events.createdAt), desc(events.id))
    .limit(query.limit + 1);
  return toPage(rows, query.limit, { codec: app.cursors, listKey }, (page) => page.map(serializeEvent));
}

export async function getEvent(app: AppContext, tenant: Tenant, id: string): Promise<Event> {
  const [row] = await app.db
    .select()
    .from(events)
    .where(and(inTenant(events, tenant), eq(events.id, id), gte(events.createdAt, retentionStart(app))));
  if (!row) throw notFound("event", id);
  return serializeEvent(row);
}
