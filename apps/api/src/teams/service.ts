import { apiTimestamp, recordEvent, serializeConversation } from "@parley/core";
import { inTenant, newId, type Queryable, teamMembers, teams, users } from "@parley/db";
import type { api, OperationInput, Team } from "@parley/schema";
import { and, desc, eq } from "drizzle-orm";
import type { AppContext } from "../context.js";
import { findConversation, updateConversationRow } from "../conversations/queries.js";
import { ApiError, notFound } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { afterPosition, listKeyOf, toPage } from "../http/pagination.js";
import { serializeUser } from "../users/service.js";
import {
  deleteMember,
  deleteTeamRow,
  findTeamRow,
  findUserForMembership,
  insertMember,
  lockConversationsOfTeam,
} from "./queries.js";

type TeamRow = typeof teams.$inferSelect;
type CreateInput = OperationInput<typeof api.teams.create>["body"];
type UpdateInput = OperationInput<typeof api.teams.update>["body"];
type AddUserInput = OperationInput<typeof api.teams.addUser>["body"];
type ListQuery = OperationInput<typeof api.teams.list>["query"];
type UsersQuery = OperationInput<typeof api.teams.users>["query"];

export function serializeTeam(row: TeamRow): Team {
  return {
    object: "team",
    id: row.id,
    name: row.name,
    created_at: apiTimestamp(row.createdAt),
    updated_at: apiTimestamp(row.updatedAt),
  };
}

/** The team; `key share` holds it against a concurrent delete while something is linked to it. */
export async function findTeam(db: Queryable, tenant: Tenant, id: string, lock?: "key share") {
  return findTeamRow(db, tenant, id, lock);
}

export async function listTeamsPage(app: AppContext, tenant: Tenant, query: ListQuery) {
  const listKey = listKeyOf("teams.list", tenant);
  const after = app.cursors.decode(listKey, query.after);
  const rows = await app.db
    .select()
    .from(teams)
    .where(and(inTenant(teams, tenant), afterPosition(teams, after)))
    .orderBy(desc(teams.createdAt), desc(teams.id))
    .limit(query.limit + 1);
  return toPage(rows, query.limit, { codec: app.cursors, listKey }, (page) => page.map(serializeTeam));
}

export async function createTeam(app: AppContext, tenant: Tenant, input: CreateInput): Promise<Team> {
  const [row] = await app.db
    .insert(teams)
    .values({ id: newId("team"), ...tenant, name: input.name })
    .returning();
  if (!row) throw new Error("team insert returned nothing");
  return serializeTeam(row);
}

export async function getTeam(app: AppContext, tenant: Tenant, id: string): Promise<Team> {
  const row = await findTeam(app.db, tenant, id);
  if (!row) throw notFound("team", id);
  return serializeTeam(row);
}

export async function updateTeam(app: AppContext, tenant: Tenant, id: string, input: UpdateInput): Promise<Team> {
  const [row] = await app.db
    .update(teams)
    .set({ ...(input.name !== undefined ? { name: input.name } : {}), updatedAt: new Date() })
    .where(and(inTenant(teams, tenant), eq(teams.id, id)))
    .returning();
  if (!row) throw notFound("team", id);
  return serializeTeam(row);
}

/** Clears the team from its conversations (each emits `conversation.assigned`), then deletes it. */
async function unassignTeam(tx: Queryable, tenant: Tenant, conversationIds: readonly string[]) {
  for (const conversationId of conversationIds) {
    const found = await findConversation(tx, tenant, conversationId, "update");
    if (!found) continue;
    const row = await updateConversationRow(tx, tenant, found.conversation.id, { teamId: null });
    await recordEvent(tx, tenant, "conversation.assigned", {
      conversation: serializeConversation(row, found.channelType),
    });
  }
}

/**
 * The agents stay; their memberships go with the team. Conversations are locked before
 * the team, the order `assign` takes them in (conversation, then team), so the two never
 * deadlock; a second pass catches an assignment committed while the first one ran.
 */
export async function deleteTeam(app: AppContext, tenant: Tenant, id: string) {
  await app.db.transaction(async (tx) => {
    const first = await lockConversationsOfTeam(tx, tenant, id);
    const team = await findTeamRow(tx, tenant, id, "update");
    if (!team) throw notFound("team", id);
    const seen = new Set(first);
    const late = (await lockConversationsOfTeam(tx, tenant, team.id)).filter((found) => !seen.has(found));
    await unassignTeam(tx, tenant, [...first, ...late]);
    await deleteTeamRow(tx, tenant, team.id);
  });
  return { object: "team" as const, id, deleted: true as const };
}

async function requireMembershipParties(tx: Queryable, tenant: Tenant, teamId: string, userId: string, param?: string) {
  const team = await findTeamRow(tx, tenant, teamId, "key share");
  if (!team) throw notFound("team", teamId);
  const user = await findUserForMembership(tx, tenant, userId);
  if (!user) throw new ApiError("resource_not_found", `No such user: '${userId}'`, param ? { param } : {});
  return { team, user };
}

/** Adding a member again changes nothing; an agent of another organization is not found. */
export async function addTeamUser(app: AppContext, tenant: Tenant, teamId: string, input: AddUserInput) {
  return app.db.transaction(async (tx) => {
    const { team, user } = await requireMembershipParties(tx, tenant, teamId, input.user_id, "user_id");
    await insertMember(tx, { organizationId: tenant.organizationId, teamId: team.id, userId: user.id });
    return serializeTeam(team);
  });
}

/** Removing an agent who is not a member changes nothing; an unknown agent is not found. */
export async function removeTeamUser(app: AppContext, tenant: Tenant, teamId: string, userId: string) {
  return app.db.transaction(async (tx) => {
    const { team, user } = await requireMembershipParties(tx, tenant, teamId, userId);
    await deleteMember(tx, tenant, team.id, user.id);
    return serializeTeam(team);
  });
}

/** Members newest first by when they joined the team. */
export async function listTeamUsersPage(app: AppContext, tenant: Tenant, teamId: string, query: UsersQuery) {
  const team = await findTeam(app.db, tenant, teamId);
  if (!team) throw notFound("team", teamId);
  const listKey = listKeyOf("teams.users.list", tenant, team.id);
  const after = app.cursors.decode(listKey, query.after);
  const rows = await app.db
    .select({ user: users, createdAt: teamMembers.createdAt, id: users.id })
    .from(teamMembers)
    .innerJoin(users, eq(users.id, teamMembers.userId))
    .where(
      and(
        eq(teamMembers.teamId, team.id),
        eq(users.organizationId, tenant.organizationId),
        afterPosition({ createdAt: teamMembers.createdAt, id: users.id }, after),
      ),
    )
    .orderBy(desc(teamMembers.createdAt), desc(users.id))
    .limit(query.limit + 1);
  return toPage(rows, query.limit, { codec: app.cursors, listKey }, (page) =>
    page.map((row) => serializeUser(row.user)),
  );
}

/**
 * For `pnpm admin add-team-member`: the user and the team must both belong to the given
 * organization, or a team would list another organization's agent.
 */
export async function addTeamMember(db: Queryable, input: { organizationId: string; teamId: string; userId: string }) {
  const [team] = await db
    .select({ id: teams.id })
    .from(teams)
    .where(and(eq(teams.id, input.teamId), eq(teams.organizationId, input.organizationId)));
  const [user] = await db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.id, input.userId), eq(users.organizationId, input.organizationId)));
  if (!team) throw new Error(`team ${input.teamId} is not of organization ${input.organizationId}`);
  if (!user) throw new Error(`user ${input.userId} is not of organization ${input.organizationId}`);
  await db.insert(teamMembers).values(input).onConflictDoNothing();
}
