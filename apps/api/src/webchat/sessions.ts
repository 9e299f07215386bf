import { apiTimestamp, recordEvent, serializeConversation } from "@parley/core";
import { channels, newId, type Queryable, webchatSessions } from "@parley/db";
import type { WebchatSession } from "@parley/schema";
import { and, eq } from "drizzle-orm";
import type { Request } from "express";
import { assertChannelConnected } from "../channels/status.js";
import { insertContact } from "../contacts/queries.js";
import { loadContact } from "../contacts/serialize.js";
import type { AppContext } from "../context.js";
import { insertConversation } from "../conversations/queries.js";
import { ApiError, notFound } from "../http/api-error.js";
import { hashApiKey, randomBase62 } from "../organizations/api-keys.js";

export type SessionRow = typeof webchatSessions.$inferSelect;
const TOKEN_PATTERN = /^wct_[0-9A-Za-z]{40}$/;

export type ChannelRow = typeof channels.$inferSelect;

/** The web chat channel a visitor starts a session on; any other id is 404. */
export async function findWebchatChannel(app: AppContext, channelId: string): Promise<ChannelRow> {
  const [channel] = await app.db
    .select()
    .from(channels)
    .where(and(eq(channels.id, channelId), eq(channels.type, "webchat")));
  if (!channel) throw notFound("web chat channel", channelId);
  assertChannelConnected(channel.id, channel.status);
  return channel;
}

/** A visitor of a disconnected web chat is refused (409 `invalid_state`), whatever their session. */
export async function assertSessionChannelConnected(app: AppContext, session: { channelId: string }): Promise<void> {
  const [channel] = await app.db
    .select({ status: channels.status })
    .from(channels)
    .where(eq(channels.id, session.channelId));
  assertChannelConnected(session.channelId, channel?.status);
}

export async function createSession(
  app: AppContext,
  channel: ChannelRow,
  visitor: { name?: string | undefined; email?: string | undefined },
): Promise<WebchatSession> {
  const token = `wct_${randomBase62(40)}`;
  const [row] = await app.db
    .insert(webchatSessions)
    .values({
      id: newId("webchatSession"),
      organizationId: channel.organizationId,
      environment: channel.environment,
      channelId: channel.id,
      tokenHash: hashApiKey(token),
      visitorName: visitor.name ?? null,
      visitorEmail: visitor.email ?? null,
    })
    .returning();
  if (!row) throw new Error("web chat session insert returned nothing");
  return {
    object: "webchat_session",
    id: row.id,
    channel_id: row.channelId,
    token,
    created_at: apiTimestamp(row.createdAt),
  };
}

const DAY_MS = 86_400_000;
/** `last_seen_at` is written at most this often: a session's requests do not each write a row. */
const TOUCH_EVERY_MS = 3_600_000;

/**
 * The visitor token comes as a Bearer header; only the event stream (`queryToken`) also
 * takes `?token=`, because a browser's EventSource cannot set headers. A token idle for
 * `WEBCHAT_SESSION_IDLE_DAYS` has expired, and one the visitor ended is gone.
 */
export async function authenticateVisitor(
  app: AppContext,
  req: Request,
  options: { queryToken?: boolean } = {},
): Promise<SessionRow> {
  const header = /^Bearer\s+(\S+)$/i.exec(req.get("authorization") ?? "")?.[1];
  const query = options.queryToken && typeof req.query.token === "string" ? req.query.token : undefined;
  const token = header ?? query;
  if (!token)
    throw new ApiError("authentication_required", "Send the visitor token as `Authorization: Bearer wct_...`.");
  if (!TOKEN_PATTERN.test(token)) throw new ApiError("invalid_api_key", "The visitor token is invalid.");
  const [session] = await app.db
    .select()
    .from(webchatSessions)
    .where(eq(webchatSessions.tokenHash, hashApiKey(token)));
  if (!session) throw new ApiError("invalid_api_key", "The visitor token is invalid.");
  const now = Date.now();
  const idleMs = now - session.lastSeenAt.getTime();
  if (idleMs > app.webchatLimits.sessionIdleDays * DAY_MS) {
    throw new ApiError("invalid_api_key", "The visitor token has expired; start a new session.");
  }
  if (idleMs > TOUCH_EVERY_MS) {
    await app.db
      .update(webchatSessions)
      .set({ lastSeenAt: new Date(now) })
      .where(eq(webchatSessions.id, session.id));
  }
  return session;
}

/** The visitor ends the session: the token stops working at once; the conversation stays the business's. */
export async function endSession(app: AppContext, session: SessionRow): Promise<void> {
  await app.db.delete(webchatSessions).where(eq(webchatSessions.id, session.id));
}

/**
 * The visitor's conversation, created with its contact on the first message (recording
 * `contact.created` and `conversation.created` like any other creation).
 */
export async function conversationOf(tx: Queryable, session: SessionRow): Promise<string> {
  const [locked] = await tx.select().from(webchatSessions).where(eq(webchatSessions.id, session.id)).for("update");
  if (locked?.conversationId) return locked.conversationId;
  const tenant = { organizationId: session.organizationId, environment: session.environment };
  const contactRow = await insertContact(tx, {
    id: newId("contact"),
    ...tenant,
    name: session.visitorName ?? `Web visitor ${session.id.slice(-6)}`,
    email: session.visitorEmail,
    customFields: {},
    metadata: { webchat_session_id: session.id },
  });
  if (!contactRow) throw new Error("web chat contact insert returned nothing");
  await recordEvent(tx, tenant, "contact.created", { contact: await loadContact(tx, contactRow) });
  const conversationRow = await insertConversation(tx, {
    id: newId("conversation"),
    ...tenant,
    contactId: contactRow.id,
    channelId: session.channelId,
    metadata: {},
  });
  if (!conversationRow) throw new Error("web chat conversation insert returned nothing");
  await recordEvent(tx, tenant, "conversation.created", {
    conversation: serializeConversation(conversationRow, "webchat"),
  });
  await tx
    .update(webchatSessions)
    .set({ contactId: contactRow.id, conversationId: conversationRow.id, lastSeenAt: new Date() })
    .where(eq(webchatSessions.id, session.id));
  return conversationRow.id;
}
