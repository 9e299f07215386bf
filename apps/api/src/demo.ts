import { type Database, organizations } from "@parley/db";
import { sql } from "drizzle-orm";
import { type CreatedOrganization, createOrganization } from "./organizations/organizations.js";

/** The transaction lock that makes "is it empty, then create" one step for every process. */
const DEMO_LOCK = sql`select pg_advisory_xact_lock(hashtext('parley:demo-organization'))`;

/**
 * On an empty database only: a demo organization so that a first curl works at once. One,
 * however many processes start together on that database: each checks and creates under
 * one transaction lock (a lock of the transaction, so it holds behind PgBouncer too).
 */
export async function createDemoOrganizationIfEmpty(db: Database): Promise<CreatedOrganization | undefined> {
  return db.transaction(async (tx) => {
    await tx.execute(DEMO_LOCK);
    const [row] = await tx.select({ count: sql<number>`count(*)::int` }).from(organizations);
    if ((row?.count ?? 0) > 0) return undefined;
    return createOrganization(tx, "Demo organization");
  });
}

export function demoBanner(demo: CreatedOrganization, apiUrl: string): string {
  return [
    "",
    "  ┌──────────────────────────────────────────────────────────────────────────┐",
    "  │ Parley demo organization (LOCAL ONLY: created because the database was   │",
    "  │ empty; these keys are shown once and never again)                        │",
    "  └──────────────────────────────────────────────────────────────────────────┘",
    `  organization: ${demo.organization.id}`,
    `  live key:     ${demo.keys.live}`,
    `  test key:     ${demo.keys.test}`,
    "",
    `  Try it:  curl ${apiUrl}/contacts -H "Authorization: Bearer ${demo.keys.test}"`,
    `  Console: ${apiUrl.replace(/\/v1$/, "")}/console/ (sign in with the test key)`,
    "",
  ].join("\n");
}
