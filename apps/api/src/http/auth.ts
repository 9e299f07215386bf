import type { Database } from "@parley/db";
import type { Environment, Scope } from "@parley/schema";
import type { RequestHandler } from "express";
import { API_KEY_PATTERN, findActiveKey, hashApiKey } from "../organizations/api-keys.js";
import { ApiError } from "./api-error.js";
import type { ApiKeyCache, KnownKey } from "./key-cache.js";
import { currentWindow, enforceRateLimit, type RateLimitCounter } from "./rate-limit.js";

/** Who is calling: every query of a request is confined to this organization and environment. */
export interface Tenant {
  organizationId: string;
  environment: Environment;
}

export interface AuthContext extends Tenant {
  keyId: string;
  scopes: readonly string[];
}

/**
 * The credentials of an `Authorization: Bearer ...` header: undefined when there is no
 * such header (or it carries nothing), the raw text otherwise, even when it is malformed.
 */
function bearerCredentials(header: string | undefined): string | undefined {
  const match = header ? /^Bearer(?:\s+(.*))?$/i.exec(header.trim()) : null;
  const credentials = match?.[1]?.trim();
  return credentials ? credentials : undefined;
}

function invalidApiKey(): ApiError {
  return new ApiError("invalid_api_key", "The API key is invalid or has been revoked.");
}

/**
 * The key's tenant and scopes from this process's cache (no statement), else from the
 * database; the request counted against its organization's allowance of `limitPerMinute`
 * in the process (RateLimitCounter), and refused past it. Nothing is counted for a key
 * that does not exist. A cached key whose count needs no flush is admitted without
 * awaiting anything: most requests, and each await is a promise and a turn of the
 * microtask queue.
 */
export function authenticate(
  db: Database,
  keys: ApiKeyCache | undefined,
  counter: RateLimitCounter,
  limitPerMinute: number,
): RequestHandler {
  return (req, res, next) => {
    const key = bearerCredentials(req.get("authorization"));
    if (key === undefined) {
      throw new ApiError(
        "authentication_required",
        "Provide your API key in the Authorization header: `Authorization: Bearer parley_live_...`.",
      );
    }
    if (!API_KEY_PATTERN.test(key)) throw invalidApiKey();
    const admit = (found: KnownKey | undefined): Promise<void> | undefined => {
      // The prefix must agree with the stored environment: a key cannot be re-labelled.
      if (!found || !key.startsWith(`parley_${found.environment}_`)) throw invalidApiKey();
      const window = currentWindow();
      const admitCounted = (count: number) => {
        enforceRateLimit(res, limitPerMinute, count, window);
        req.auth = {
          organizationId: found.organizationId,
          environment: found.environment,
          keyId: found.id,
          scopes: found.scopes,
        };
        next();
      };
      const count = counter.countNow(found.organizationId, window);
      if (count === undefined) return counter.count(found.organizationId, window).then(admitCounted);
      admitCounted(count);
      return undefined;
    };
    const hash = hashApiKey(key);
    const cached = keys?.get(hash);
    if (cached) return admit(cached);
    return keyFromDatabase(db, keys, hash).then(admit);
  };
}

async function keyFromDatabase(db: Database, keys: ApiKeyCache | undefined, hash: string) {
  const epoch = keys?.epoch() ?? 0;
  const found = await findActiveKey(db, hash);
  if (found) keys?.set(hash, found, epoch);
  return found;
}

export function assertScope(auth: AuthContext | undefined, scope: Scope): void {
  if (!auth?.scopes.includes(scope)) {
    throw new ApiError("insufficient_scope", `This API key lacks the '${scope}' scope this endpoint needs.`);
  }
}

export function tenantOf(auth: AuthContext): Tenant {
  return { organizationId: auth.organizationId, environment: auth.environment };
}
