import { applyMessageStatus, ingestInboundMessage } from "@parley/core";
import { conversations, messages, users, webchatSessions } from "@parley/db";
import type { WebchatMessage } from "@parley/schema";
import { and, eq, sql } from "drizzle-orm";
import type { Response } from "express";
import { type AppContext, relayNow } from "../context.js";
import { ApiError } from "../http/api-error.js";
import { assertSessionChannelConnected, conversationOf, type SessionRow } from "./sessions.js";
import { visitorMessage, visitorMessageOf } from "./visitor-message.js";

const HISTORY_LIMIT = 100;

/**
 * A message from the visitor: inbound on its conversation, through the shared ingestion
 * path; in a quiet process its webhook jobs are added by the request (RequestRelay).
 */
export async function postVisitorMessage(app: AppContext, session: SessionRow, text: string): Promise<WebchatMessage> {
  await assertSessionChannelConnected(app, session);
  const message = await app.db.transaction(async (tx) => {
    const conversationId = await conversationOf(tx, session);
    const tenant = { organizationId: session.organizationId, environment: session.environment };
    return ingestInboundMessage(
      tx,
      app.publicBaseUrl(),
      tenant,
      { conversationId, type: "text", text, attachment: undefined },
      { relayNow: relayNow(app) },
    );
  });
  return visitorMessageOf(message);
}

/** The conversation so far, oldest first, as the widget shows it. */
export async function visitorHistory(app: AppContext, session: SessionRow): Promise<WebchatMessage[]> {
  const conversationId = await currentConversation(app, session);
  if (!conversationId) return [];
  const [assigned] = await app.db
    .select({ name: users.name })
    .from(conversations)
    .innerJoin(users, eq(users.id, conversations.assignedUserId))
    .where(eq(conversations.id, conversationId));
  const rows = await app.db
    .select()
    .from(messages)
    .where(eq(messages.conversationId, conversationId))
    .orderBy(sql`${messages.createdAt} desc`, sql`${messages.id} desc`)
    .limit(HISTORY_LIMIT);
  return rows.reverse().map((row) => visitorMessage(row, assigned?.name ?? null));
}

/** `delivered` when a reply reached the page, `read` when the page showed it; forward-only like every receipt. */
export async function applyVisitorReceipt(
  app: AppContext,
  session: SessionRow,
  receipt: { message_id: string; status: "delivered" | "read" },
) {
  const conversationId = await currentConversation(app, session);
  const [message] = conversationId
    ? await app.db
        .select({ id: messages.id })
        .from(messages)
        .where(
          and(
            eq(messages.id, receipt.message_id),
            eq(messages.conversationId, conversationId),
            eq(messages.direction, "outbound"),
          ),
        )
    : [];
  if (!message)
    throw new ApiError("resource_not_found", `No such message: '${receipt.message_id}'`, { param: "message_id" });
  // The widget may acknowledge a message the worker has not marked `sent` yet: it was seen, so it was sent.
  await app.db.transaction(async (tx) => {
    await applyMessageStatus(
      tx,
      app.publicBaseUrl(),
      message.id,
      { status: receipt.status },
      app.metrics?.statusApplied,
    );
  });
}

async function currentConversation(app: AppContext, session: SessionRow): Promise<string | null> {
  const [row] = await app.db
    .select({ conversationId: webchatSessions.conversationId })
    .from(webchatSessions)
    .where(eq(webchatSessions.id, session.id));
  return row?.conversationId ?? null;
}

/**
 * Server-sent events: the agents' replies as they are stored, through this process's one
 * poller (ReplyHub); the browser's EventSource reconnects by itself and `Last-Event-ID`
 * resumes after the last message it saw.
 */
export async function streamReplies(
  app: AppContext,
  session: SessionRow,
  address: string,
  lastEventId: string | undefined,
  res: Response,
) {
  app.replyHub.admit(session.id, address);
  const conversationId = await currentConversation(app, session);
  const cursor = conversationId ? await startingPoint(app, conversationId, lastEventId) : undefined;
  res.status(200);
  res.setHeader("Content-Type", "text/event-stream");
  res.setHeader("Cache-Control", "no-cache, no-transform");
  res.setHeader("X-Accel-Buffering", "no");
  res.flushHeaders();
  app.replyHub.open(session.id, address, conversationId, cursor, res);
}

/** Resume after the last event the browser saw; a new stream replays the replies from the start (the widget skips ids it has). */
async function startingPoint(app: AppContext, conversationId: string, lastEventId: string | undefined) {
  if (!lastEventId) return undefined;
  const [seen] = await app.db
    .select({ createdAt: messages.createdAt, id: messages.id })
    .from(messages)
    .where(and(eq(messages.id, lastEventId), eq(messages.conversationId, conversationId)));
  return seen;
}
