import {
  ChannelProviderError,
  capabilityMatrix,
  channelCapabilities,
  liveProviderOf,
  type ProviderSettings,
  splitSecrets,
} from "@parley/channels";
import { apiTimestamp, type SecretBox } from "@parley/core";
import { channels, inTenant, newId, type Queryable } from "@parley/db";
import type { api, Channel, ChannelType, OperationInput } from "@parley/schema";
import { channelTypes } from "@parley/schema";
import { and, desc, eq, sql } from "drizzle-orm";
import type { AppContext } from "../context.js";
import { notFound } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { afterPosition, listKeyOf, toPage } from "../http/pagination.js";

type ChannelRow = typeof channels.$inferSelect;
type ListQuery = OperationInput<typeof api.channels.list>["query"];

/**
 * Provider settings stay inside: the API shows the type, provider, name and capability
 * matrix (the type's, as the channel's settings narrow it: an SMS number without MMS).
 */
export function serializeChannel(row: ChannelRow): Channel {
  return {
    object: "channel",
    id: row.id,
    type: row.type,
    name: row.name,
    environment: row.environment,
    sandbox: row.provider === "sandbox",
    provider: row.provider,
    capabilities: capabilityMatrix(channelCapabilities(row)),
    status: row.status,
    status_reason: row.statusReason,
    created_at: apiTimestamp(row.createdAt),
    updated_at: apiTimestamp(row.updatedAt),
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
  sms: "Sandbox SMS",
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

/** Settings a provider would refuse: named, so `pnpm admin connect-channel` can say which. */
export class ChannelSettingsError extends Error {
  override name = "ChannelSettingsError";
}

/**
 * The account is already connected (any organization, any environment): one number, Page,
 * Instagram account or inbound address receives its traffic through one channel only.
 */
export class ChannelAlreadyConnectedError extends Error {
  override name = "ChannelAlreadyConnectedError";
}

/** The setting that names what a channel receives, as `channels.provider_account` is kept from it. */
const ACCOUNT_SETTING: Partial<Record<ChannelType, string>> = {
  whatsapp: "phone_number_id",
  messenger: "page_id",
  instagram: "instagram_account_id",
  email: "address",
  sms: "from",
};

/**
 * The setting naming a channel's account and its value as `channels.provider_account` keeps
 * it: an SMS channel's Messaging Service (Twilio) or sender, Vonage's digits given `+`.
 */
function accountOf(
  type: ChannelType,
  provider: string,
  settings: Record<string, unknown>,
): { setting: string; value: string } {
  if (type === "sms" && typeof settings.messaging_service_sid === "string") {
    return { setting: "messaging_service_sid", value: settings.messaging_service_sid };
  }
  const setting = ACCOUNT_SETTING[type] ?? "account";
  const value = String(settings[setting] ?? "");
  return { setting, value: provider === "vonage" && /^[0-9]+$/.test(value) ? `+${value}` : value };
}

/**
 * The settings of a live channel's provider (the type's only one, or for SMS the one the
 * channel was connected with); undefined when the type has no live provider. A provider the
 * type does not have is a `ChannelSettingsError` naming the choices.
 */
export function providerSettingsOf(type: ChannelType, provider: string): ProviderSettings | undefined {
  try {
    return liveProviderOf(type, provider);
  } catch (error) {
    if (error instanceof ChannelProviderError) throw new ChannelSettingsError(error.message);
    throw error;
  }
}

/** The channel holding this account; an email address is compared as the column keeps it, in lower case. */
async function alreadyConnected(db: Queryable, type: ChannelType, account: string) {
  const [row] = await db
    .select({ id: channels.id, organizationId: channels.organizationId, environment: channels.environment })
    .from(channels)
    .where(
      and(
        eq(channels.type, type),
        eq(channels.providerAccount, type === "email" ? sql`lower(${account})` : sql`${account}`),
      ),
    );
  return row;
}

/**
 * A live (or extra test) channel with its provider settings, for `pnpm admin connect-channel`.
 * The known providers' settings are checked; the secret ones (tokens, app secret, SMTP
 * credentials) are sealed with the secrets key and never stored in the clear.
 */
export async function connectChannel(
  db: Queryable,
  secretBox: SecretBox,
  input: {
    organizationId: string;
    environment: "live" | "test";
    type: ChannelType;
    name: string;
    provider: string;
    settings: Record<string, unknown>;
  },
): Promise<Channel> {
  const live = providerSettingsOf(input.type, input.provider);
  const settings = live && live.provider === input.provider ? checkSettings(live, input.settings) : input.settings;
  const split = live ? splitSecrets(live, settings) : { plain: settings, secret: {} };
  const [row] = await db
    .insert(channels)
    .values({
      id: newId("channel"),
      ...input,
      settings: split.plain,
      secretSettings: Object.keys(split.secret).length > 0 ? secretBox.seal(split.secret) : null,
    })
    // Another channel of the same account (even one inserted concurrently): nothing
    // inserted, nothing returned, no error to abort a caller's transaction; named below.
    .onConflictDoNothing({ target: [channels.providerAccount, channels.type] })
    .returning();
  if (!row) throw await conflictOf(db, input.type, input.provider, split.plain);
  return serializeChannel(row);
}

export async function conflictOf(
  db: Queryable,
  type: ChannelType,
  provider: string,
  settings: Record<string, unknown>,
): Promise<Error> {
  const { setting, value } = accountOf(type, provider, settings);
  const existing = await alreadyConnected(db, type, value);
  const holder = existing
    ? ` as channel ${existing.id} of organization ${existing.organizationId} (${existing.environment})`
    : "";
  return new ChannelAlreadyConnectedError(
    `The ${type} ${setting} '${value}' is already connected${holder}; an account can be connected to one channel only.`,
  );
}

export function checkSettings(provider: ProviderSettings, settings: Record<string, unknown>): Record<string, unknown> {
  const result = provider.schema.safeParse(settings);
  if (result.success) return result.data as Record<string, unknown>;
  const problems = result.error.issues.map((issue) => `${issue.path.join(".") || "settings"}: ${issue.message}`);
  throw new ChannelSettingsError(`Invalid ${provider.provider} settings: ${problems.join("; ")}`);
}
