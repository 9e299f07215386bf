import { inTenant, newId, type Queryable, teamMembers, teams, users } from "@parley/db";
import type { api, OperationInput, Team } from "@parley/schema";
import { and, desc, eq } from "drizzle-orm";
import type { AppContext } from "../context.js";
import { notFound } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { afterPosition, listKeyOf, toPage } from "../http/pagination.js";
import { serializeUser } from "../users/service.js";

type TeamRow = typeof teams.$inferSelect;
type CreateInput = OperationInput<typeof api.teams.create>["body"];
type ListQuery = OperationInput<typeof api.teams.list>["query"];
type UsersQuery = OperationInput<typeof api.teams.users>["query"];

export function serializeTeam(row: TeamRow): Team {
  return {
    object: "team",
    id: row.id,
    name: row.name,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

export async function findTeam(db: Queryable, tenant: Tenant, id: string) {
  const [row] = await db
    .select()
    .from(teams)
    .where(and(inTenant(teams, tenant), eq(teams.id, id)));
  return row;
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
