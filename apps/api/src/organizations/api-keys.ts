import { hash, randomInt } from "node:crypto";
import { apiTimestamp } from "@parley/core";
import { apiKeys, newId, postgresClientOf, type Queryable } from "@parley/db";
import { type Environment, type Scope, scopes } from "@parley/schema";
import { desc, eq } from "drizzle-orm";
import { API_KEY_REVOKED_CHANNEL } from "../http/key-cache.js";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const SECRET_LENGTH = 40;
export const API_KEY_PATTERN = /^parley_(live|test)_[0-9A-Za-z]{32,}$/;

/** One-shot (`crypto.hash`): every request hashes its key, and a Hash object per request cost more than the hash. */
export function hashApiKey(key: string): string {
  return hash("sha256", key, "hex");
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

export interface ActiveKey {
  id: string;
  organizationId: string;
  environment: Environment;
  scopes: string[];
}

/** The active key whose secret hashes to `secretHash` (hashApiKey), if any. */
export async function findActiveKey(db: Queryable, secretHash: string): Promise<ActiveKey | undefined> {
  // postgres.js's own template: built for next to nothing, where drizzle's `sql` is
  // rendered anew for every request (see reusableQuery).
  const [row] = await postgresClientOf(db)<
    { id: string; organization_id: string; environment: Environment; scopes: string[] }[]
  >`
    select id, organization_id, environment, scopes from api_keys
    where secret_hash = ${secretHash} and revoked_at is null`;
  if (!row) return undefined;
  return { id: row.id, organizationId: row.organization_id, environment: row.environment, scopes: row.scopes };
}

/**
 * Revokes the key, and announces it on API_KEY_REVOKED_CHANNEL in the same statement: the
 * notification leaves when the revocation commits, and every API process drops the key
 * from its cache (see ApiKeyCache).
 */
export async function revokeApiKey(db: Queryable, organizationId: string, keyId: string): Promise<boolean> {
  const rows = await postgresClientOf(db)<{ id: string }[]>`
    with revoked as (
      update api_keys set revoked_at = now()
      where id = ${keyId} and organization_id = ${organizationId} and revoked_at is null
      returning id
    )
    select id, pg_notify(${API_KEY_REVOKED_CHANNEL}, id) from revoked`;
  return rows.length > 0;
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
    created_at: apiTimestamp(row.createdAt),
    revoked_at: row.revokedAt ? apiTimestamp(row.revokedAt) : null,
  }));
}
