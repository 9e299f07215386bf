import express from "express";
import type { AppContext } from "../context.js";
import { metaWebhookRoutes } from "./meta-webhooks.js";
import { twilioWebhookRoutes } from "./twilio-webhooks.js";
import { vonageWebhookRoutes } from "./vonage-webhooks.js";

/**
 * The providers' webhooks below `/v1/channels/webhooks`, keyless and public: each provider's
 * router (`/meta`, `/twilio`, ...) limits its requests per source address, caps its bodies,
 * checks its provider's signature before storing anything, and leaves the rest to a worker
 * job. One line per provider.
 */
export function providerWebhookRoutes(app: AppContext): express.Router {
  const router = express.Router();
  router.use(metaWebhookRoutes(app));
  router.use(twilioWebhookRoutes(app));
  router.use(vonageWebhookRoutes(app));
  return router;
}
