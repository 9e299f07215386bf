import { createHash } from "node:crypto";
import { type Database, idempotencyKeys, isUniqueViolation, postgresClientOf, type Queryable } from "@parley/db";
import { and, eq } from "drizzle-orm";
import { ApiError, validationError } from "./api-error.js";
import type { Tenant } from "./auth.js";
import type { TransactionGroups } from "./group-commit.js";
import { jsonTextOf } from "./json-response.js";

export const IDEMPOTENCY_HEADER = "Idempotency-Key";
const MAX_KEY_LENGTH = 255;
const RETENTION_MS = 24 * 60 * 60 * 1000;

export interface StoredResponse {
  status: number;
  body: unknown;
  /** The body as JSON text, when it is already written so: the key's record holds it, a replay answers it. */
  text?: string | undefined;
  /** The handler's statements still in flight (see Reply.written in route.ts). */
  written?: Promise<unknown> | undefined;
  /** To run once the transaction has committed (see Reply.committed in route.ts); never for a replay. */
  committed?: (() => void) | undefined;
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
 * of an object, and a replay must be the response the first request got. The same text is
 * the first answer and every replay's, written once. Records written before were jsonb
 * objects: answered as JSON again.
 */
function replayOf(status: number, stored: unknown): StoredResponse {
  return typeof stored === "string" ? { status, body: undefined, text: stored } : { status, body: stored };
}

/** A key older than this is forgotten (and swept by the worker's housekeeping). */
function expired(row: { createdAt: Date; completedAt: Date | null }, now = Date.now()): boolean {
  return row.completedAt === null || now - row.createdAt.getTime() > RETENTION_MS;
}

/**
 * Runs `execute` once per (organization, environment, key), in one transaction with the key's record:
 * the key, the request's effects and the stored response commit together or not at all,
 * so no crash can leave a request done but its key unrecorded (a retry would run it
 * twice) or the reverse. A transaction-scoped advisory lock on the key makes a concurrent
 * duplicate, from any API process, answer 409 `idempotency_in_progress` at once instead
 * of waiting; the key's unique index catches the rest (see below). Only successes are
 * stored: a failure rolls back, so a retry runs normally.
 */
export async function runIdempotent<Prefetched>(
  db: Database,
  request: IdempotentRequest,
  execute: (tx: Queryable, prefetched: Prefetched | undefined) => Promise<StoredResponse>,
  prefetch?: (tx: Queryable) => Promise<Prefetched>,
  groups?: TransactionGroups,
): Promise<IdempotencyOutcome> {
  const fingerprint = fingerprintOf(request);
  const inTransaction = async (tx: Queryable) => {
    // Sent together, in one round trip; the handler's first read rides along (it only
    // reads, so a replay loses nothing). The look-up may take its snapshot just before a
    // first request commits and releases the lock: the key's unique index then refuses
    // the second record, the transaction rolls back, and the client is told to retry.
    const [{ locked, existing }, prefetched] = await Promise.all([lockAndFindKey(tx, request), prefetch?.(tx)]);
    if (!locked) throw inProgress();
    if (existing && !expired(existing)) {
      if (existing.fingerprint !== fingerprint) {
        throw new ApiError(
          "idempotency_key_reuse",
          "This Idempotency-Key was already used with a different request. Use a new key for a new request.",
        );
      }
      const replay: IdempotencyOutcome = {
        replayed: true,
        response: replayOf(existing.responseStatus ?? 200, existing.responseBody),
      };
      return { outcome: replay, inFlight: undefined };
    }
    if (existing) await release(tx, request);
    const response = await execute(tx, prefetched);
    const text = response.body === undefined ? undefined : jsonTextOf(response.body);
    const recorded =
      response.status < 400 &&
      record(tx, request, fingerprint, response.status, text).catch((error: unknown) => {
        throw isUniqueViolation(error) ? inProgress() : error;
      });
    // The record goes out with the handler's statements still in flight, and COMMIT right
    // behind them: all in one round trip. The first to fail is the error (the others then
    // fail as statements of an aborted transaction, whose COMMIT PostgreSQL turns into a
    // ROLLBACK): awaited once the transaction has ended, never ignored.
    const inFlight = Promise.all([response.written, recorded]);
    inFlight.catch(() => {});
    const ran: IdempotencyOutcome = {
      replayed: false,
      response: { status: response.status, body: response.body, text, committed: response.committed },
    };
    return { outcome: ran, inFlight };
  };
  // In a group, the key's lock and record are the member's own; one transaction commits them all.
  const groupKey = `${request.tenant.organizationId}\n${request.tenant.environment}\n${request.key}`;
  const outcome = groups ? await groups.runOrAlone(groupKey, inTransaction) : await db.transaction(inTransaction);
  await outcome.inFlight;
  return outcome.outcome;
}

function inProgress(): ApiError {
  return new ApiError(
    "idempotency_in_progress",
    "A request with this Idempotency-Key is still being processed. Retry shortly.",
  );
}

// Every idempotent request runs these: postgres.js statements, as drizzle's execution
// (placeholders, row mapping) cost more than building them.

async function record(
  tx: Queryable,
  request: IdempotentRequest,
  fingerprint: string,
  status: number,
  text: string | undefined,
) {
  await postgresClientOf(tx)`
    insert into idempotency_keys (organization_id, key, environment, fingerprint, response_status, response_body, completed_at)
    values (${request.tenant.organizationId}, ${request.key}, ${request.tenant.environment}, ${fingerprint},
            ${status}::int, to_jsonb(${text ?? null}::text), ${new Date().toISOString()}::timestamptz)`;
}

/**
 * The key's transaction-scoped lock and its record, if any, in one statement: the lock
 * is taken as the one row is produced, before the record is read.
 */
async function lockAndFindKey(db: Queryable, request: IdempotentRequest) {
  const { organizationId, environment } = request.tenant;
  const lockName = `idempotency\n${organizationId}\n${environment}\n${request.key}`;
  const [row] = await postgresClientOf(db)<
    {
      locked: boolean;
      fingerprint: string | null;
      response_status: number | null;
      response_body: unknown;
      created_at: string | null;
      completed_at: string | null;
    }[]
  >`
    select pg_try_advisory_xact_lock(hashtextextended(${lockName}, 0)) as locked,
           k.fingerprint, k.response_status, k.response_body, k.created_at, k.completed_at
    from (select 1) as one
    left join idempotency_keys k
      on k.organization_id = ${organizationId} and k.environment = ${environment} and k.key = ${request.key}`;
  const existing =
    row?.fingerprint != null && row.created_at !== null
      ? {
          fingerprint: row.fingerprint,
          responseStatus: row.response_status,
          responseBody: row.response_body,
          createdAt: new Date(row.created_at),
          completedAt: row.completed_at === null ? null : new Date(row.completed_at),
        }
      : undefined;
  return { locked: row?.locked === true, existing };
}

async function release(db: Queryable, request: IdempotentRequest): Promise<void> {
  await db
    .delete(idempotencyKeys)
    .where(
      and(
        eq(idempotencyKeys.organizationId, request.tenant.organizationId),
        eq(idempotencyKeys.environment, request.tenant.environment),
        eq(idempotencyKeys.key, request.key),
      ),
    );
}
