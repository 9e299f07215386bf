import { operations } from "@parley/schema";
import express from "express";
import { apiKeyRoutes } from "./api-keys/routes.js";
import { attachmentRoutes } from "./attachments/routes.js";
import { sendSignedAttachmentContent } from "./attachments/service.js";
import { providerWebhookRoutes } from "./channels/provider-webhooks.js";
import { channelRoutes } from "./channels/routes.js";
import { contactRoutes } from "./contacts/routes.js";
import type { AppContext } from "./context.js";
import { conversationRoutes } from "./conversations/routes.js";
import { customFieldRoutes } from "./custom-fields/routes.js";
import { eventRoutes } from "./events/routes.js";
import { authenticate } from "./http/auth.js";
import { consoleRoutes } from "./http/console.js";
import { errorHandler, routeNotFound } from "./http/error-handler.js";
import { healthRoutes } from "./http/health.js";
import { metricsHandler } from "./http/metrics.js";
import { docsRoutes, openApiDocumentRoute } from "./http/reference.js";
import { requestBasics } from "./http/request-basics.js";
import { bindMethodNotAllowed } from "./http/route.js";
import { messageRoutes } from "./messages/routes.js";
import { noteRoutes } from "./notes/routes.js";
import { tagRoutes } from "./tags/routes.js";
import { teamRoutes } from "./teams/routes.js";
import { testHelperRoutes } from "./test-helpers/routes.js";
import { userRoutes } from "./users/routes.js";
import { webchatPageRoute, webchatVisitorRoutes } from "./webchat/routes.js";
import { widgetScriptRoute } from "./webchat/widget-script.js";
import { webhookRoutes } from "./webhooks/routes.js";

/**
 * The middleware order, in one screen. The /v1 router comes right after the one layer
 * every request passes (requestBasics): express tries a request against each top-level layer in turn,
 * and a router mounted at `/` (health, docs) is entered and searched by every request
 * that reaches it, so the API's own traffic reaches none. Keyless /v1 routes (the web
 * chat, provider webhooks, the OpenAPI document) are mounted on the /v1 router before
 * its key check.
 */
export function createApp(app: AppContext) {
  const server = express();
  server.disable("x-powered-by");
  server.set("etag", false);
  server.set("trust proxy", false);

  server.use(requestBasics(server, app));
  server.use("/v1", v1Routes(app));
  server.use(healthRoutes(app));
  if (app.metrics && app.metricsToken) server.get("/metrics", metricsHandler(app.metrics.registry, app.metricsToken));
  server.use(docsRoutes());
  server.use(consoleRoutes());
  server.get("/webchat/widget.js", widgetScriptRoute);
  server.get("/webchat/:channel_id", webchatPageRoute(app));
  // Keyless by design: a file link carries its own signature.
  server.get("/files/:attachment_id", (req, res) => sendSignedAttachmentContent(app, req, res));

  server.use(routeNotFound);
  server.use(errorHandler);
  return server;
}

function v1Routes(app: AppContext): express.Router {
  const v1 = express.Router();
  // Keyless by design: the web chat's visitors carry their own token, Meta signs its webhooks.
  v1.get("/openapi.json", openApiDocumentRoute(app.publicBaseUrl));
  v1.use("/webchat", webchatVisitorRoutes(app));
  v1.use("/channels/webhooks", providerWebhookRoutes(app));
  v1.use(authenticate(app.db, app.apiKeyCache, app.rateLimitCounter, app.rateLimitPerMinute));
  // An operation's JSON body is read by its own route, where it takes one (http/route.ts).
  contactRoutes(v1, app);
  conversationRoutes(v1, app);
  noteRoutes(v1, app);
  messageRoutes(v1, app);
  attachmentRoutes(v1, app);
  channelRoutes(v1, app);
  userRoutes(v1, app);
  teamRoutes(v1, app);
  tagRoutes(v1, app);
  customFieldRoutes(v1, app);
  webhookRoutes(v1, app);
  eventRoutes(v1, app);
  testHelperRoutes(v1, app);
  apiKeyRoutes(v1, app);
  bindMethodNotAllowed(v1, operations);
  return v1;
}
