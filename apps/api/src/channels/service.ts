import { capabilityMatrix, channelDefinition } from "@parley/channels";
import { channels, inTenant, newId, type Queryable } from "@parley/db";
import type { api, Channel, ChannelType, OperationInput } from "@parley/schema";
import { channelTypes } from "@parley/schema";
import { and, desc, eq } from "drizzle-orm";
import type { AppContext } from "../context.js";
import { notFound } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { afterPosition, listKeyOf, toPage } from "../http/pagination.js";

type ChannelRow = typeof channels.$inferSelect;
type ListQuery = OperationInput<typeof api.channels.list>["query"];

/** Provider settings stay inside: the API shows the type, name and capability matrix only. */
export function serializeChannel(row: ChannelRow): Channel {
  return {
    object: "channel",
    id: row.id,
    type: row.type,
    name: row.name,
    environment: row.environment,
    sandbox: row.provider === "sandbox",
    capabilities: capabilityMatrix(channelDefinition(row.type).capabilities),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

export async function listChannelsPage(app: AppContext, tenant: Tenant, query: ListQuery) {
  const listKey = listKeyOf("channels.list", tenant);
  const after = app.cursors.decode(listKey, query.after);
  const rows = await app.db
    .select()
    .from(channels)
    .where(
      and(
        inTenant(channels, tenant),
        query.type ? eq(channels.type, query.type) : undefined,
        afterPosition(channels, after),
      ),
    )
    .orderBy(desc(channels.createdAt), desc(channels.id))
    .limit(query.limit + 1);
  return toPage(rows, query.limit, { codec: app.cursors, listKey }, (page) => page.map(serializeChannel));
}

export async function findChannel(db: Queryable, tenant: Tenant, id: string) {
  const [row] = await db
    .select()
    .from(channels)
    .where(and(inTenant(channels, tenant), eq(channels.id, id)));
  return row;
}

export async function getChannel(app: AppContext, tenant: Tenant, id: string): Promise<Channel> {
  const row = await findChannel(app.db, tenant, id);
  if (!row) throw notFound("channel", id);
  return serializeChannel(row);
}

const sandboxNames: Record<ChannelType, string> = {
  whatsapp: "Sandbox WhatsApp",
  instagram: "Sandbox Instagram",
  messenger: "Sandbox Messenger",
  email: "Sandbox email",
  webchat: "Sandbox web chat",
};

/** The test environment's channels: one sandbox of each type, created with the organization. */
export async function createSandboxChannels(db: Queryable, organizationId: string) {
  await db
    .insert(channels)
    .values(
      channelTypes.map((type) => ({
        id: newId("channel"),
        organizationId,
        environment: "test" as const,
        type,
        name: sandboxNames[type],
        provider: "sandbox",
      })),
    )
    .onConflictDoNothing();
}

/** A live (or extra test) channel with its provider settings, for `pnpm admin connect-channel`. */
export async function connectChannel(
  db: Queryable,
  input: {
    organizationId: string;
    environment: "live" | "test";
    type: ChannelType;
    name: string;
    provider: string;
    settings: Record<string, unknown>;
  },
): Promise<Channel> {
  const [row] = await db
    .insert(channels)
    .values({ id: newId("channel"), ...input })
    .returning();
  if (!row) throw new Error("channel insert returned nothing");
  return serializeChannel(row);
}
