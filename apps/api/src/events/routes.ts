import { api } from "@parley/schema";
import type { Router } from "express";
import type { AppContext } from "../context.js";
import { bindOperation } from "../http/route.js";
import { getEvent, listEventsPage } from "./service.js";

export function eventRoutes(router: Router, app: AppContext) {
  bindOperation(router, app, api.events.list, async ({ tenant, query }) => ({
    body: await listEventsPage(app, tenant, query),
  }));
  bindOperation(router, app, api.events.get, async ({ tenant, params }) => ({
    body: await getEvent(app, tenant, params.event_id),
  }));
}
