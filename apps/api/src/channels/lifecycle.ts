import { sandboxSettingsOf, splitSecrets } from "@parley/channels";
import { channelSettings, recordEvent, type SecretBox } from "@parley/core";
import { channels, isUniqueViolation, type Queryable } from "@parley/db";
import type { Channel } from "@parley/schema";
import { eq, sql } from "drizzle-orm";
import { ChannelSettingsError, checkSettings, conflictOf, providerSettingsOf, serializeChannel } from "./service.js";

/**
 * The life of a connected channel, for `pnpm admin update-channel`, `disconnect-channel`
 * and `reconnect-channel`: settings changed in place (the channel, its conversations and
 * history stay), and sending and receiving switched off and on again.
 */

type ChannelRow = typeof channels.$inferSelect;

export class ChannelNotFoundError extends Error {
  override name = "ChannelNotFoundError";
}

/** The change asked for does not fit the channel's status (disconnecting a disconnected channel). */
export class ChannelStateError extends Error {
  override name = "ChannelStateError";
}

async function loadChannel(db: Queryable, channelId: string, lock = false): Promise<ChannelRow> {
  const query = db.select().from(channels).where(eq(channels.id, channelId));
  const [row] = lock ? await query.for("update") : await query;
  if (!row) throw new ChannelNotFoundError(`No such channel: ${channelId}`);
  return row;
}

/**
 * Changes some of a channel's settings: the given ones replace the stored ones (an empty
 * value removes an optional one), the whole is validated against the channel type's
 * settings schema as `connect-channel` validates it, then `check` (the provider's word on
 * the credentials) runs, and only then are the settings stored, the secret ones sealed
 * again. A channel that `needs_attention` becomes `active` when the provider accepted the
 * credentials (or, unchecked, when new secrets were given); a disconnected one stays so.
 * The next send reads the new settings.
 */
export async function updateChannelSettings(
  db: Queryable,
  secretBox: SecretBox,
  input: {
    channelId: string;
    settings: Record<string, unknown>;
    check?: (channel: ChannelRow, settings: Record<string, unknown>) => Promise<void>;
  },
): Promise<Channel> {
  const row = await loadChannel(db, input.channelId);
  const sandbox = row.provider === "sandbox";
  const schema = sandbox ? sandboxSettingsOf(row.type) : providerSettingsOf(row.type, row.provider);
  const applies = schema !== undefined && (sandbox || schema.provider === row.provider);
  if (row.provider === "sandbox" && !applies) {
    throw new ChannelSettingsError(`Channel ${row.id} is a sandbox: it has no provider settings to change`);
  }
  if (Object.keys(input.settings).length === 0) throw new ChannelSettingsError("Give at least one --setting key=value");
  if (applies) {
    const known = Object.keys(schema.schema.shape);
    const unknown = Object.keys(input.settings).filter((key) => !known.includes(key));
    if (unknown.length > 0) {
      throw new ChannelSettingsError(
        `Unknown ${row.type} setting${unknown.length > 1 ? "s" : ""} ${unknown.map((key) => `'${key}'`).join(", ")}; the settings are: ${known.join(", ")}`,
      );
    }
  }
  let current: Record<string, unknown>;
  try {
    current = channelSettings(secretBox, row);
  } catch (error) {
    throw new ChannelSettingsError(`The channel's stored secrets cannot be opened: ${(error as Error).message}`);
  }
  const merged: Record<string, unknown> = { ...current };
  for (const [key, value] of Object.entries(input.settings)) {
    if (value === "") delete merged[key];
    else merged[key] = value;
  }
  const settings = applies ? checkSettings(schema, merged) : merged;
  await input.check?.(row, settings);
  const split = schema && applies ? splitSecrets(schema, settings) : { plain: settings, secret: {} };
  // Fresh credentials end `needs_attention`: checked by the provider, or at least new secrets
  // (`--no-check`). Decided in the statement, so a concurrent disconnect is never undone.
  const fresh = input.check !== undefined || Object.keys(input.settings).some((key) => schema?.secret.includes(key));
  const status = fresh
    ? sql`case when ${channels.status} = 'needs_attention' then 'active' else ${channels.status} end`
    : sql`${channels.status}`;
  const statusReason = fresh
    ? sql`case when ${channels.status} = 'needs_attention' then null else ${channels.statusReason} end`
    : sql`${channels.statusReason}`;
  try {
    const [updated] = await db
      .update(channels)
      .set({
        settings: split.plain,
        secretSettings: Object.keys(split.secret).length > 0 ? secretBox.seal(split.secret) : null,
        updatedAt: new Date(),
        status,
        statusReason,
      })
      .where(eq(channels.id, row.id))
      .returning();
    if (!updated) throw new ChannelNotFoundError(`No such channel: ${row.id}`);
    return serializeChannel(updated);
  } catch (error) {
    // Another channel holds the account now named (a changed phone number id or address).
    if (isUniqueViolation(error)) throw await conflictOf(db, row.type, row.provider, split.plain);
    throw error;
  }
}

const DEFAULT_DISCONNECT_REASON = "Disconnected by an operator (pnpm admin disconnect-channel)";

/**
 * Stops a channel sending and receiving: sends are refused (409), provider webhooks and
 * inbound email for it are acknowledged and dropped, web chat visitors are refused. The
 * channel, its conversations and messages stay readable. Records `channel.disconnected`.
 */
export async function disconnectChannel(db: Queryable, channelId: string, reason?: string): Promise<Channel> {
  return db.transaction(async (tx) => {
    const row = await loadChannel(tx, channelId, true);
    if (row.status === "disconnected") throw new ChannelStateError(`Channel ${row.id} is already disconnected`);
    return setStatus(tx, row, "disconnected", reason?.trim() || DEFAULT_DISCONNECT_REASON);
  });
}

/** Lets a disconnected channel send and receive again (`active`); records `channel.reconnected`. */
export async function reconnectChannel(db: Queryable, channelId: string): Promise<Channel> {
  return db.transaction(async (tx) => {
    const row = await loadChannel(tx, channelId, true);
    if (row.status !== "disconnected") {
      throw new ChannelStateError(`Channel ${row.id} is not disconnected (it is ${row.status})`);
    }
    return setStatus(tx, row, "active", null);
  });
}

async function setStatus(
  tx: Queryable,
  row: ChannelRow,
  status: "active" | "disconnected",
  reason: string | null,
): Promise<Channel> {
  const [updated] = await tx
    .update(channels)
    .set({ status, statusReason: reason, updatedAt: new Date() })
    .where(eq(channels.id, row.id))
    .returning();
  if (!updated) throw new ChannelNotFoundError(`No such channel: ${row.id}`);
  const channel = serializeChannel(updated);
  const tenant = { organizationId: row.organizationId, environment: row.environment };
  await recordEvent(tx, tenant, status === "disconnected" ? "channel.disconnected" : "channel.reconnected", {
    channel,
  });
  return channel;
}
