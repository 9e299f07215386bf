import { z } from "zod";
import { defineOperation } from "../operation.js";
import { listOf, paginationQuery } from "../primitives.js";
import { team, teamCreateBody, user } from "../resources/team.js";

const page = z.strictObject({ ...paginationQuery });

export const userOperations = {
  list: defineOperation({
    id: "users.list",
    method: "get",
    path: "/users",
    tag: "Agents and teams",
    summary: "List agents",
    description: "The organization's agents; the same in live and test.",
    scope: "users:read",
    query: page,
    response: listOf(user),
    responseName: "UserList",
    status: 200,
    errors: ["validation_error", "invalid_cursor"],
  }),
  get: defineOperation({
    id: "users.get",
    method: "get",
    path: "/users/{user_id}",
    tag: "Agents and teams",
    summary: "Retrieve an agent",
    scope: "users:read",
    params: z.object({ user_id: z.string() }),
    response: user,
    responseName: "User",
    status: 200,
    errors: ["resource_not_found"],
  }),
};

const teamParams = z.object({ team_id: z.string() });

export const teamOperations = {
  list: defineOperation({
    id: "teams.list",
    method: "get",
    path: "/teams",
    tag: "Agents and teams",
    summary: "List teams",
    scope: "teams:read",
    query: page,
    response: listOf(team),
    responseName: "TeamList",
    status: 200,
    errors: ["validation_error", "invalid_cursor"],
  }),
  create: defineOperation({
    id: "teams.create",
    method: "post",
    path: "/teams",
    tag: "Agents and teams",
    summary: "Create a team",
    description: "Members are added with `pnpm admin add-team-member`.",
    scope: "teams:write",
    body: teamCreateBody,
    bodyName: "TeamCreate",
    response: team,
    responseName: "Team",
    status: 201,
    errors: ["invalid_json", "validation_error"],
  }),
  get: defineOperation({
    id: "teams.get",
    method: "get",
    path: "/teams/{team_id}",
    tag: "Agents and teams",
    summary: "Retrieve a team",
    scope: "teams:read",
    params: teamParams,
    response: team,
    responseName: "Team",
    status: 200,
    errors: ["resource_not_found"],
  }),
  users: defineOperation({
    id: "teams.users.list",
    method: "get",
    path: "/teams/{team_id}/users",
    tag: "Agents and teams",
    summary: "List a team's agents",
    scope: "teams:read",
    params: teamParams,
    query: page,
    response: listOf(user),
    responseName: "UserList",
    status: 200,
    errors: ["resource_not_found", "validation_error", "invalid_cursor"],
  }),
};
