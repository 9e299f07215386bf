import { conversations, inTenant, type Queryable, teamMembers, teams, users } from "@parley/db";
import { and, eq } from "drizzle-orm";
import type { Tenant } from "../http/auth.js";

/**
 * The team, optionally locked: `key share` holds it against a concurrent delete while a
 * member or a conversation is linked to it; `update` is the delete itself.
 */
export async function findTeamRow(db: Queryable, tenant: Tenant, id: string, lock?: "key share" | "update") {
  const query = db
    .select()
    .from(teams)
    .where(and(inTenant(teams, tenant), eq(teams.id, id)));
  const [row] = lock ? await query.for(lock) : await query;
  return row;
}

/** An agent of the organization (agents are the same in both environments), held against a delete. */
export async function findUserForMembership(db: Queryable, tenant: Tenant, id: string) {
  const [row] = await db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.organizationId, tenant.organizationId), eq(users.id, id)))
    .for("key share");
  return row;
}

export async function insertMember(db: Queryable, member: { organizationId: string; teamId: string; userId: string }) {
  await db.insert(teamMembers).values(member).onConflictDoNothing();
}

export async function deleteMember(db: Queryable, tenant: Tenant, teamId: string, userId: string) {
  await db
    .delete(teamMembers)
    .where(
      and(
        eq(teamMembers.organizationId, tenant.organizationId),
        eq(teamMembers.teamId, teamId),
        eq(teamMembers.userId, userId),
      ),
    );
}

/** The conversations assigned to the team, locked in id order (a stable lock order). */
export async function lockConversationsOfTeam(db: Queryable, tenant: Tenant, teamId: string) {
  const rows = await db
    .select({ id: conversations.id })
    .from(conversations)
    .where(and(inTenant(conversations, tenant), eq(conversations.teamId, teamId)))
    .orderBy(conversations.id)
    .for("update");
  return rows.map((row) => row.id);
}

export async function deleteTeamRow(db: Queryable, tenant: Tenant, id: string) {
  await db.delete(teams).where(and(inTenant(teams, tenant), eq(teams.id, id)));
}
