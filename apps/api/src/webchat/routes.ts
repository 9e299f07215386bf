import { randomBytes } from "node:crypto";
import { webchatSettingsOf } from "@parley/channels";
import { channels } from "@parley/db";
import { type WebchatLauncher, webchatMessageBody, webchatReceiptBody, webchatSessionCreateBody } from "@parley/schema";
import { eq } from "drizzle-orm";
import express, { type RequestHandler, type Router } from "express";
import type { z } from "zod";
import type { AppContext } from "../context.js";
import { ApiError, notFound, validationError } from "../http/api-error.js";
import { jsonBody } from "../http/body-limit.js";
import { isStorableText, parseOrThrow, requireStorableText } from "../http/validation.js";
import { panelLocale } from "./panel-strings.js";
import { authenticateVisitor, createSession, endSession, findWebchatChannel } from "./sessions.js";
import { applyVisitorReceipt, postVisitorMessage, streamReplies, visitorHistory } from "./visitor.js";
import { limitMessages, limitSessionsByAddress, limitSessionsByChannel, sourceAddress } from "./visitor-limits.js";
import { VISITOR_HEADERS, widgetPage, widgetPageHeaders } from "./widget-page.js";

/** Any site may embed the widget: the visitor token, not a cookie, authenticates. */
const cors: RequestHandler = (req, res, next) => {
  res.set(VISITOR_HEADERS);
  res.setHeader("Access-Control-Allow-Origin", "*");
  res.setHeader("Access-Control-Allow-Headers", "authorization, content-type");
  res.setHeader("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
  if (req.method === "OPTIONS") {
    res.status(204).end();
    return;
  }
  next();
};

function parse<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  // Text PostgreSQL cannot store (NUL, lone surrogates) is refused as in the API itself.
  requireStorableText(body, "body");
  return parseOrThrow(schema, body ?? {}, "body");
}

/** What the channel's pre-chat form requires, the session requires too: the form is only the page's side of it. */
function requirePrechatAnswers(stored: unknown, visitor: { name?: string | undefined; email?: string | undefined }) {
  const settings = webchatSettingsOf(stored);
  if (settings.prechat_name === "required" && !visitor.name?.trim()) {
    throw validationError("name", "This web chat asks for the visitor's name before the chat starts.");
  }
  if (settings.prechat_email === "required" && !visitor.email) {
    throw validationError("email", "This web chat asks for the visitor's email address before the chat starts.");
  }
}

/** A visitor's JSON body, on the routes that take one: at most 64 KB. */
const readVisitorBody = jsonBody({ limitBytes: 64 * 1024 });

/** The visitor's endpoints under `/v1/webchat`, authenticated by a visitor token instead of an API key. */
export function webchatVisitorRoutes(app: AppContext): Router {
  const router = express.Router();
  router.use(cors);
  router.get("/channels/:channel_id/launcher", async (req, res) => {
    const channelId = String(req.params.channel_id);
    if (!isStorableText(channelId)) throw notFound("web chat channel", channelId);
    const channel = await findWebchatChannel(app, channelId);
    const settings = webchatSettingsOf(channel.settings);
    // The same for every visitor of the channel: any cache may keep it a few minutes.
    res.set("Cache-Control", "public, max-age=300");
    res.json({
      object: "webchat_launcher",
      channel_id: channel.id,
      color: settings.color ?? null,
      position: settings.position,
    } satisfies WebchatLauncher);
  });
  router.post("/channels/:channel_id/sessions", readVisitorBody, async (req, res) => {
    const channelId = String(req.params.channel_id);
    // An id holding a NUL character cannot even be looked up: it names no channel.
    if (!isStorableText(channelId)) throw notFound("web chat channel", channelId);
    const visitor = parse(webchatSessionCreateBody, req.body);
    await limitSessionsByAddress(app, req, res);
    const channel = await findWebchatChannel(app, channelId);
    requirePrechatAnswers(channel.settings, visitor);
    await limitSessionsByChannel(app, res, channel.id);
    res.status(201).json(await createSession(app, channel, visitor));
  });
  router.delete("/session", async (req, res) => {
    const session = await authenticateVisitor(app, req);
    await endSession(app, session);
    app.replyHub.endSession(session.id);
    res.status(204).end();
  });
  router.get("/session/messages", async (req, res) => {
    const session = await authenticateVisitor(app, req);
    res.json(await visitorHistory(app, session));
  });
  router.post("/session/messages", readVisitorBody, async (req, res) => {
    const session = await authenticateVisitor(app, req);
    const { text } = parse(webchatMessageBody, req.body);
    await limitMessages(app, req, res, session.channelId);
    res.status(201).json(await postVisitorMessage(app, session, text));
  });
  router.post("/session/receipts", readVisitorBody, async (req, res) => {
    const session = await authenticateVisitor(app, req);
    await applyVisitorReceipt(app, session, parse(webchatReceiptBody, req.body));
    res.status(204).end();
  });
  router.get("/session/events", async (req, res) => {
    const session = await authenticateVisitor(app, req, { queryToken: true });
    await streamReplies(app, session, sourceAddress(req), req.get("last-event-id"), res);
  });
  return router;
}

/** The widget page itself: `/webchat/{channel_id}`. */
export function webchatPageRoute(app: AppContext): RequestHandler {
  return async (req, res) => {
    const channelId = String(req.params.channel_id);
    if (!isStorableText(channelId)) throw new ApiError("route_not_found", "No such web chat.");
    const [channel] = await app.db.select().from(channels).where(eq(channels.id, channelId));
    if (channel?.type !== "webchat") throw new ApiError("route_not_found", "No such web chat.");
    const nonce = randomBytes(18).toString("base64");
    res.set(widgetPageHeaders(nonce));
    // The language follows the visitor: the page varies with Accept-Language.
    res.set("Vary", "Accept-Language");
    const locale = panelLocale(req.query.lang, req.get("accept-language"));
    res
      .type("html")
      .send(widgetPage(channel.id, channel.name, nonce, { settings: webchatSettingsOf(channel.settings), locale }));
  };
}
