import { api } from "@parley/schema";
import type { Router } from "express";
import type { AppContext } from "../context.js";
import { bindOperation } from "../http/route.js";
import { createCustomField, deleteCustomField, listCustomFieldsPage, updateCustomField } from "./service.js";

export function customFieldRoutes(router: Router, app: AppContext) {
  bindOperation(router, app, api.customFields.list, async ({ tenant, query }) => ({
    body: await listCustomFieldsPage(app, tenant, query),
  }));
  bindOperation(router, app, api.customFields.create, async ({ tenant, body }) => ({
    body: await createCustomField(app, tenant, body),
  }));
  bindOperation(router, app, api.customFields.update, async ({ tenant, params, body }) => ({
    body: await updateCustomField(app, tenant, params.custom_field_id, body),
  }));
  bindOperation(router, app, api.customFields.delete, async ({ tenant, params }) => ({
    body: await deleteCustomField(app, tenant, params.custom_field_id),
  }));
}
