import { createHash, randomInt } from "node:crypto";
import { apiKeys, newId, postgresClientOf, type Queryable } from "@parley/db";
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

export interface ActiveKeyAndCount {
  id: string;
  organizationId: string;
  environment: Environment;
  scopes: string[];
  /** This request's number in its organization's current rate-limit window. */
  count: number;
}

/**
 * The key's row and its organization's rate-limit count for the window, in one round
 * trip: every authenticated request needs both, and nothing is counted for a key that
 * does not exist.
 */
export async function findActiveKeyAndCount(
  db: Queryable,
  key: string,
  windowStart: Date,
): Promise<ActiveKeyAndCount | undefined> {
  // postgres.js's own template: built for next to nothing, where drizzle's `sql` is
  // rendered anew for every request (see reusableQuery).
  const rows = await postgresClientOf(db)<
    { id: string; organization_id: string; environment: Environment; scopes: string[]; count: number }[]
  >`
    with key as (
      select id, organization_id, environment, scopes from api_keys
      where secret_hash = ${hashApiKey(key)} and revoked_at is null
    ),
    counted as (
      insert into rate_limit_windows (organization_id, window_start, count)
      select organization_id, ${windowStart.toISOString()}::timestamptz, 1 from key
      on conflict (organization_id, window_start) do update set count = rate_limit_windows.count + 1
      returning count
    )
    select key.id, key.organization_id, key.environment, key.scopes, (select count from counted) as count from key`;
  const [row] = rows;
  if (!row) return undefined;
  return {
    id: row.id,
    organizationId: row.organization_id,
    environment: row.environment,
    scopes: row.scopes,
    count: Number(row.count),
  };
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
