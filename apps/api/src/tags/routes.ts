import { api } from "@parley/schema";
import type { Router } from "express";
import type { AppContext } from "../context.js";
import { bindOperation } from "../http/route.js";
import { createTag, deleteTag, listTagsPage, updateTag } from "./service.js";

export function tagRoutes(router: Router, app: AppContext) {
  bindOperation(router, app, api.tags.list, async ({ tenant, query }) => ({
    body: await listTagsPage(app, tenant, query),
  }));
  bindOperation(router, app, api.tags.create, async ({ tenant, body }) => ({
    body: await createTag(app, tenant, body),
  }));
  bindOperation(router, app, api.tags.update, async ({ tenant, params, body }) => ({
    body: await updateTag(app, tenant, params.tag_id, body),
  }));
  bindOperation(router, app, api.tags.delete, async ({ tenant, params }) => ({
    body: await deleteTag(app, tenant, params.tag_id),
  }));
}
