import type express from "express";
import type { AppContext } from "../context.js";
import type { ProviderWebhookResult, WebhookProvider } from "../http/metrics.js";

/**
 * Counts each request to a provider's webhook by what became of it
 * (`parley_provider_webhooks_total{provider}`): the result the route named
 * (`res.locals.webhookResult`) on a 200, else what its status says: the provider's own
 * refusals (`refusals`: Meta's 401 bad signature and 403 bad verify token, Twilio's 403),
 * a body over the limit (413), the rate limit (429), a fault (5xx); anything else `invalid`.
 */
export function countWebhookResults(
  app: AppContext,
  provider: WebhookProvider,
  refusals: Readonly<Record<number, ProviderWebhookResult>>,
): express.RequestHandler {
  const byStatus: Readonly<Record<number, ProviderWebhookResult>> = {
    200: "accepted",
    413: "too_large",
    429: "rate_limited",
    ...refusals,
  };
  return (_req, res, next) => {
    res.once("finish", () => {
      const named = res.locals.webhookResult as ProviderWebhookResult | undefined;
      const result =
        named && res.statusCode === 200
          ? named
          : (byStatus[res.statusCode] ?? (res.statusCode >= 500 ? "error" : "invalid"));
      app.metrics?.providerWebhook(provider, result);
    });
    next();
  };
}
