import { api } from "@parley/schema";
import type { Router } from "express";
import type { AppContext } from "../context.js";
import { bindOperation } from "../http/route.js";
import { createTeam, getTeam, listTeamsPage, listTeamUsersPage } from "./service.js";

export function teamRoutes(router: Router, app: AppContext) {
  bindOperation(router, app, api.teams.list, async ({ tenant, query }) => ({
    body: await listTeamsPage(app, tenant, query),
  }));
  bindOperation(router, app, api.teams.create, async ({ tenant, body }) => ({
    body: await createTeam(app, tenant, body),
  }));
  bindOperation(router, app, api.teams.get, async ({ tenant, params }) => ({
    body: await getTeam(app, tenant, params.team_id),
  }));
  bindOperation(router, app, api.teams.users, async ({ tenant, params, query }) => ({
    body: await listTeamUsersPage(app, tenant, params.team_id, query),
  }));
}
