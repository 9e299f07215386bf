import { api } from "@parley/schema";
import type { Router } from "express";
import type { AppContext } from "../context.js";
import { bindOperation } from "../http/route.js";
import {
  addTeamUser,
  createTeam,
  deleteTeam,
  getTeam,
  listTeamsPage,
  listTeamUsersPage,
  removeTeamUser,
  updateTeam,
} from "./service.js";

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
  bindOperation(router, app, api.teams.update, async ({ tenant, params, body }) => ({
    body: await updateTeam(app, tenant, params.team_id, body),
  }));
  bindOperation(router, app, api.teams.delete, async ({ tenant, params }) => ({
    body: await deleteTeam(app, tenant, params.team_id),
  }));
  bindOperation(router, app, api.teams.addUser, async ({ tenant, params, body }) => ({
    body: await addTeamUser(app, tenant, params.team_id, body),
  }));
  bindOperation(router, app, api.teams.removeUser, async ({ tenant, params }) => ({
    body: await removeTeamUser(app, tenant, params.team_id, params.user_id),
  }));
}
