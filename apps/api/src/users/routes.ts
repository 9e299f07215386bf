import { api } from "@parley/schema";
import type { Router } from "express";
import type { AppContext } from "../context.js";
import { bindOperation } from "../http/route.js";
import { getUser, listUsersPage } from "./service.js";

export function userRoutes(router: Router, app: AppContext) {
  bindOperation(router, app, api.users.list, async ({ tenant, query }) => ({
    body: await listUsersPage(app, tenant, query),
  }));
  bindOperation(router, app, api.users.get, async ({ tenant, params }) => ({
    body: await getUser(app, tenant, params.user_id),
  }));
}
