import { type Database, organizations } from "@parley/db";
import { sql } from "drizzle-orm";
import { type CreatedOrganization, createOrganization } from "./organizations/organizations.js";

/** On an empty database only: a demo organization so that a first curl works at once. */
export async function createDemoOrganizationIfEmpty(db: Database): Promise<CreatedOrganization | undefined> {
  const [row] = await db.select({ count: sql<number>`count(*)::int` }).from(organizations);
  if ((row?.count ?? 0) > 0) return undefined;
  return createOrganization(db, "Demo organization");
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
