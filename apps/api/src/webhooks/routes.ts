import { api } from "@parley/schema";
import type { Router } from "express";
import type { AppContext } from "../context.js";
import { bindOperation } from "../http/route.js";
import {
  createEndpoint,
  deleteEndpoint,
  getEndpoint,
  listDeliveriesPage,
  listEndpointsPage,
  retryDelivery,
  rotateSecret,
  sendTestEvent,
  updateEndpoint,
} from "./service.js";

export function webhookRoutes(router: Router, app: AppContext) {
  const { webhooks } = api;
  bindOperation(router, app, webhooks.list, async ({ tenant, query }) => ({
    body: await listEndpointsPage(app, tenant, query),
  }));
  bindOperation(router, app, webhooks.create, async ({ tenant, body }) => ({
    body: await createEndpoint(app, tenant, body),
  }));
  bindOperation(router, app, webhooks.get, async ({ tenant, params }) => ({
    body: await getEndpoint(app, tenant, params.webhook_id),
  }));
  bindOperation(router, app, webhooks.update, async ({ tenant, params, body }) => ({
    body: await updateEndpoint(app, tenant, params.webhook_id, body),
  }));
  bindOperation(router, app, webhooks.delete, async ({ tenant, params }) => ({
    body: await deleteEndpoint(app, tenant, params.webhook_id),
  }));
  bindOperation(router, app, webhooks.rotateSecret, async ({ tenant, params }) => ({
    body: await rotateSecret(app, tenant, params.webhook_id),
  }));
  bindOperation(router, app, webhooks.test, async ({ tenant, params }) => ({
    body: await sendTestEvent(app, tenant, params.webhook_id),
  }));
  bindOperation(router, app, webhooks.deliveries, async ({ tenant, params, query }) => ({
    body: await listDeliveriesPage(app, tenant, params.webhook_id, query),
  }));
  bindOperation(router, app, webhooks.retryDelivery, async ({ tenant, params }) => ({
    body: await retryDelivery(app, tenant, params.webhook_id, params.delivery_id),
  }));
}
