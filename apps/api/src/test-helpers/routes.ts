import { api } from "@parley/schema";
import type { Router } from "express";
import type { AppContext } from "../context.js";
import { bindOperation } from "../http/route.js";
import { simulateInboundMessage } from "./service.js";

/** Test keys only: a live key gets 404 `route_not_found` (enforced by the catalogue's `testOnly`). */
export function testHelperRoutes(router: Router, app: AppContext) {
  bindOperation(router, app, api.testHelpers.inboundMessage, async ({ tenant, body }) => ({
    body: await simulateInboundMessage(app, tenant, body),
  }));
}
