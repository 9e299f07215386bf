import { applyMessageStatus, ingestInboundMessage } from "@parley/core";
import { messages, webchatSessions } from "@parley/db";
import type { WebchatMessage } from "@parley/schema";
import { and, asc, eq, gt, or, sql } from "drizzle-orm";
import type { Response } from "express";
import type { AppContext } from "../context.js";
import { ApiError } from "../http/api-error.js";
import { conversationOf, type SessionRow } from "./sessions.js";
import { visitorMessage, visitorMessageOf } from "./visitor-message.js";

const HISTORY_LIMIT = 100;

/** A message from the visitor: inbound on its conversation, through the shared ingestion path. */
export async function postVisitorMessage(app: AppContext, session: SessionRow, text: string): Promise<WebchatMessage> {
  const message = await app.db.transaction(async (tx) => {
    const conversationId = await conversationOf(tx, session);
    const tenant = { organizationId: session.organizationId, environment: session.environment };
    return ingestInboundMessage(tx, app.publicBaseUrl(), tenant, {
      conversationId,
      type: "text",
      text,
      attachment: undefined,
    });
  });
  return visitorMessageOf(message);
}

/** The conversation so far, oldest first, as the widget shows it. */
export async function visitorHistory(app: AppContext, session: SessionRow): Promise<WebchatMessage[]> {
  const conversationId = await currentConversation(app, session);
  if (!conversationId) return [];
  const rows = await app.db
    .select()
    .from(messages)
    .where(eq(messages.conversationId, conversationId))
    .orderBy(sql`${messages.createdAt} desc`, sql`${messages.id} desc`)
    .limit(HISTORY_LIMIT);
  return rows.reverse().map(visitorMessage);
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
    await applyMessageStatus(tx, app.publicBaseUrl(), message.id, { status: receipt.status });
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
 * Server-sent events: the agents' replies as they are stored. Each connection polls its
 * conversation (works across any number of API processes, no shared memory); the
 * browser's EventSource reconnects by itself and `Last-Event-ID` resumes after the last
 * message it saw.
 */
export function streamReplies(app: AppContext, session: SessionRow, lastEventId: string | undefined, res: Response) {
  res.status(200);
  res.setHeader("Content-Type", "text/event-stream");
  res.setHeader("Cache-Control", "no-cache, no-transform");
  res.setHeader("X-Accel-Buffering", "no");
  res.flushHeaders();
  let cursor: { createdAt: Date; id: string } | undefined;
  let started = false;
  let ticks = 0;
  let busy = false;
  const poll = async () => {
    if (busy) return;
    busy = true;
    try {
      const conversationId = await currentConversation(app, session);
      if (!conversationId) return;
      if (!started) {
        cursor = await startingPoint(app, conversationId, lastEventId);
        started = true;
      }
      const rows = await app.db
        .select()
        .from(messages)
        .where(
          and(
            eq(messages.conversationId, conversationId),
            eq(messages.direction, "outbound"),
            cursor
              ? or(
                  gt(messages.createdAt, cursor.createdAt),
                  and(eq(messages.createdAt, cursor.createdAt), gt(messages.id, cursor.id)),
                )
              : undefined,
          ),
        )
        .orderBy(asc(messages.createdAt), asc(messages.id))
        .limit(50);
      for (const message of rows.map(visitorMessage)) {
        res.write(`id: ${message.id}\nevent: message\ndata: ${JSON.stringify(message)}\n\n`);
      }
      const last = rows[rows.length - 1];
      if (last) cursor = { createdAt: last.createdAt, id: last.id };
      if (++ticks % 30 === 0) res.write(": keep-alive\n\n");
    } catch (error) {
      app.logger.warn({ err: error }, "web chat stream poll failed");
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void poll(), STREAM_POLL_MS);
  void poll();
  res.on("close", () => clearInterval(timer));
}

export const STREAM_POLL_MS = 500;

/** Resume after the last event the browser saw; a new stream replays the replies from the start (the widget skips ids it has). */
async function startingPoint(app: AppContext, conversationId: string, lastEventId: string | undefined) {
  if (!lastEventId) return undefined;
  const [seen] = await app.db
    .select({ createdAt: messages.createdAt, id: messages.id })
    .from(messages)
    .where(and(eq(messages.id, lastEventId), eq(messages.conversationId, conversationId)));
  return seen;
}
