import { createHash, randomInt } from "node:crypto";
import { apiKeys, newId, type Queryable } from "@parley/db";
import { type Environment, type Scope, scopes } from "@parley/schema";
import { and, desc, eq, isNull } from "drizzle-orm";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const SECRET_LENGTH = 40;
export const API_KEY_PATTERN = /^parley_(live|test)_[0-9A-Za-z]{32,}$/;

export function hashApiKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/** Uniformly random base-62 characters, for keys and tokens. */
export function randomBase62(length: number): string {
  let secret = "";
  for (let i = 0; i < length; i++) secret += BASE62[randomInt(BASE62.length)];
  return secret;
}

export function generateApiKey(environment: Environment): string {
  return `parley_${environment}_${randomBase62(SECRET_LENGTH)}`;
}

export interface CreatedApiKey {
  id: string;
  key: string;
  environment: Environment;
  scopes: Scope[];
}

/** Stores only the key's hash: the full key exists in this return value and nowhere else. */
export async function createApiKey(
  db: Queryable,
  input: { organizationId: string; environment: Environment; scopes?: readonly Scope[] },
): Promise<CreatedApiKey> {
  const key = generateApiKey(input.environment);
  const id = newId("apiKey");
  const keyScopes = [...(input.scopes ?? scopes)];
  await db.insert(apiKeys).values({
    id,
    organizationId: input.organizationId,
    environment: input.environment,
    secretHash: hashApiKey(key),
    lastFour: key.slice(-4),
    scopes: keyScopes,
  });
  return { id, key, environment: input.environment, scopes: keyScopes };
}

export async function findActiveKey(db: Queryable, key: string) {
  const [row] = await db
    .select({
      id: apiKeys.id,
      organizationId: apiKeys.organizationId,
      environment: apiKeys.environment,
      scopes: apiKeys.scopes,
    })
    .from(apiKeys)
    .where(and(eq(apiKeys.secretHash, hashApiKey(key)), isNull(apiKeys.revokedAt)))
    .limit(1);
  return row;
}

export async function revokeApiKey(db: Queryable, organizationId: string, keyId: string): Promise<boolean> {
  const revoked = await db
    .update(apiKeys)
    .set({ revokedAt: new Date() })
    .where(and(eq(apiKeys.id, keyId), eq(apiKeys.organizationId, organizationId), isNull(apiKeys.revokedAt)))
    .returning({ id: apiKeys.id });
  return revoked.length > 0;
}

/** Never the secret: only what tells keys apart. */
export async function listApiKeys(db: Queryable, organizationId: string) {
  const rows = await db
    .select()
    .from(apiKeys)
    .where(eq(apiKeys.organizationId, organizationId))
    .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id));
  return rows.map((row) => ({
    id: row.id,
    environment: row.environment,
    redacted_key: `parley_${row.environment}_****${row.lastFour}`,
    scopes: row.scopes,
    created_at: row.createdAt.toISOString(),
    revoked_at: row.revokedAt?.toISOString() ?? null,
  }));
}
