import { randomBytes } from "node:crypto";
import { instanceSecrets, type Queryable } from "@parley/db";
import { eq } from "drizzle-orm";

/**
 * A secret shared by every process of this installation, created once in the database,
 * so that a cursor signed by one API process is accepted by another.
 */
export async function loadInstanceSecret(db: Queryable, name: string): Promise<string> {
  await db
    .insert(instanceSecrets)
    .values({ name, value: randomBytes(32).toString("base64url") })
    .onConflictDoNothing();
  const [row] = await db.select().from(instanceSecrets).where(eq(instanceSecrets.name, name));
  if (!row) throw new Error(`instance secret ${name} is missing`);
  return row.value;
}
