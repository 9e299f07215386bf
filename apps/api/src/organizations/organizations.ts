import { apiTimestamp } from "@parley/core";
import { type Database, newId, organizations, type Queryable, users } from "@parley/db";
import type { Scope } from "@parley/schema";
import { eq } from "drizzle-orm";
import { createSandboxChannels } from "../channels/service.js";
import { createApiKey } from "./api-keys.js";

export interface CreatedOrganization {
  organization: { id: string; name: string; created_at: string };
  keys: { live: string; test: string };
}

/**
 * An organization with one all-scope key per environment and the test environment's
 * sandbox channels, in one transaction.
 */
export async function createOrganization(db: Queryable, name: string): Promise<CreatedOrganization> {
  return db.transaction(async (tx) => {
    const [organization] = await tx
      .insert(organizations)
      .values({ id: newId("organization"), name })
      .returning();
    if (!organization) throw new Error("organization insert returned nothing");
    const live = await createApiKey(tx, { organizationId: organization.id, environment: "live" });
    const test = await createApiKey(tx, { organizationId: organization.id, environment: "test" });
    await createSandboxChannels(tx, organization.id);
    return {
      organization: { id: organization.id, name: organization.name, created_at: apiTimestamp(organization.createdAt) },
      keys: { live: live.key, test: test.key },
    };
  });
}

export async function organizationExists(db: Database, id: string): Promise<boolean> {
  const rows = await db.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, id)).limit(1);
  return rows.length > 0;
}

export async function createUser(db: Database, input: { organizationId: string; name: string; email: string }) {
  const [user] = await db
    .insert(users)
    .values({ id: newId("user"), organizationId: input.organizationId, name: input.name, email: input.email })
    .returning();
  if (!user) throw new Error("user insert returned nothing");
  return {
    object: "user" as const,
    id: user.id,
    name: user.name,
    email: user.email,
    created_at: apiTimestamp(user.createdAt),
    updated_at: apiTimestamp(user.updatedAt),
  };
}

export type { Scope };
