import { createHash } from "node:crypto";
import { type Database, idempotencyKeys } from "@parley/db";
import { and, eq, sql } from "drizzle-orm";
import { ApiError, validationError } from "./api-error.js";
import type { Tenant } from "./auth.js";

export const IDEMPOTENCY_HEADER = "Idempotency-Key";
const MAX_KEY_LENGTH = 255;
const RETENTION_MS = 24 * 60 * 60 * 1000;
/** A first request still "in progress" after this long died with its process; its key is freed. */
const ABANDONED_AFTER_MS = 5 * 60 * 1000;

export interface StoredResponse {
  status: number;
  body: unknown;
}

export interface IdempotentRequest {
  key: string;
  tenant: Tenant;
  method: string;
  path: string;
  body: unknown;
}

export type IdempotencyOutcome =
  | { replayed: true; response: StoredResponse }
  | { replayed: false; response: StoredResponse };

export function readIdempotencyKey(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (header.length === 0 || header.length > MAX_KEY_LENGTH) {
    throw validationError(IDEMPOTENCY_HEADER, `must be 1 to ${MAX_KEY_LENGTH} characters`);
  }
  return header;
}

/** JSON with object keys sorted: two bodies that differ only in key order are the same request. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([name, item]) => `${JSON.stringify(name)}:${canonicalJson(item)}`).join(",")}}`;
  }
  return JSON.stringify(value ?? null);
}

function fingerprintOf(request: IdempotentRequest): string {
  return createHash("sha256")
    .update(`${request.method} ${request.path} ${request.tenant.environment}\n${canonicalJson(request.body)}`)
    .digest("hex");
}

/**
 * The response is stored as its JSON text (a jsonb string): jsonb would reorder the keys
 * of an object, and a replay must be the response the first request got.
 */
function storedBodyOf(body: unknown): string {
  return JSON.stringify(body);
}

function replayedBodyOf(stored: unknown): unknown {
  return typeof stored === "string" ? JSON.parse(stored) : stored;
}

/**
 * Runs `execute` once per (organization, key). The key row is claimed with a unique
 * constraint before anything runs, so concurrent duplicates from any API process see
 * it and get 409 `idempotency_in_progress`. Only successes are stored; a failure
 * frees the key so a retry runs normally.
 */
export async function runIdempotent(
  db: Database,
  request: IdempotentRequest,
  execute: () => Promise<StoredResponse>,
): Promise<IdempotencyOutcome> {
  const fingerprint = fingerprintOf(request);
  const claimed = await claim(db, request, fingerprint);
  if (!claimed) {
    const existing = await findKey(db, request);
    if (!existing) return runIdempotent(db, request, execute);
    const age = Date.now() - existing.createdAt.getTime();
    const abandoned = existing.completedAt === null && age > ABANDONED_AFTER_MS;
    if (age > RETENTION_MS || abandoned) {
      await release(db, request, existing.createdAt);
      return runIdempotent(db, request, execute);
    }
    if (existing.fingerprint !== fingerprint) {
      throw new ApiError(
        "idempotency_key_reuse",
        "This Idempotency-Key was already used with a different request. Use a new key for a new request.",
      );
    }
    if (existing.completedAt === null || existing.responseStatus === null) {
      throw new ApiError(
        "idempotency_in_progress",
        "A request with this Idempotency-Key is still being processed. Retry shortly.",
      );
    }
    return {
      replayed: true,
      response: { status: existing.responseStatus, body: replayedBodyOf(existing.responseBody) },
    };
  }

  let response: StoredResponse;
  try {
    response = await execute();
  } catch (error) {
    await release(db, request);
    throw error;
  }
  if (response.status >= 400) {
    await release(db, request);
    return { replayed: false, response };
  }
  await db
    .update(idempotencyKeys)
    .set({ responseStatus: response.status, responseBody: storedBodyOf(response.body), completedAt: new Date() })
    .where(
      and(eq(idempotencyKeys.organizationId, request.tenant.organizationId), eq(idempotencyKeys.key, request.key)),
    );
  return { replayed: false, response };
}

async function claim(db: Database, request: IdempotentRequest, fingerprint: string): Promise<boolean> {
  const inserted = await db
    .insert(idempotencyKeys)
    .values({
      organizationId: request.tenant.organizationId,
      key: request.key,
      environment: request.tenant.environment,
      fingerprint,
    })
    .onConflictDoNothing()
    .returning({ key: idempotencyKeys.key });
  return inserted.length > 0;
}

async function findKey(db: Database, request: IdempotentRequest) {
  const [row] = await db
    .select()
    .from(idempotencyKeys)
    .where(
      and(eq(idempotencyKeys.organizationId, request.tenant.organizationId), eq(idempotencyKeys.key, request.key)),
    );
  return row;
}

async function release(db: Database, request: IdempotentRequest, createdAt?: Date): Promise<void> {
  await db
    .delete(idempotencyKeys)
    .where(
      and(
        eq(idempotencyKeys.organizationId, request.tenant.organizationId),
        eq(idempotencyKeys.key, request.key),
        createdAt ? sql`${idempotencyKeys.createdAt} = ${createdAt.toISOString()}::timestamptz` : undefined,
      ),
    );
}
