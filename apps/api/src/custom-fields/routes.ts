import { api } from "@parley/schema";
import type { Router } from "express";
import type { AppContext } from "../context.js";
import { bindOperation } from "../http/route.js";
import { createCustomField, listCustomFieldsPage } from "./service.js";

export function customFieldRoutes(router: Router, app: AppContext) {
  bindOperation(router, app, api.customFields.list, async ({ tenant, query }) => ({
    body: await listCustomFieldsPage(app, tenant, query),
  }));
  bindOperation(router, app, api.customFields.create, async ({ tenant, body }) => ({
    body: await createCustomField(app, tenant, body),
  }));
}
