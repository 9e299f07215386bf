import type { Database, Queryable } from "@parley/db";
import type { Operation, OperationInput, OperationResponse } from "@parley/schema";
import type { Request, RequestHandler, Response, Router } from "express";
import type { AppContext } from "../context.js";
import { ApiError } from "./api-error.js";
import { type AuthContext, assertScope, type Tenant, tenantOf } from "./auth.js";
import { jsonBody } from "./body-limit.js";
import { TransactionGroups } from "./group-commit.js";
import { IDEMPOTENCY_HEADER, readIdempotencyKey, runIdempotent, type StoredResponse } from "./idempotency.js";
import { type JsonBytes, writeJson, writeJsonText } from "./json-response.js";
import { parseInput } from "./validation.js";

export interface HandlerContext<T extends Operation, Prefetched = undefined> extends OperationInput<T> {
  /** The application, bound to the request's transaction when the request is idempotent. */
  app: AppContext;
  tenant: Tenant;
  auth: AuthContext;
  req: Request;
  res: Response;
  /** What the operation's `prefetch` read, when the request was idempotent (see bindOperation). */
  prefetched: Prefetched | undefined;
}

export interface Reply<T extends Operation> {
  /** Defaults to the operation's status; find-or-create answers 200 for an existing resource. */
  status?: number;
  /** The answer, or its JSON when the handler encoded it so (JsonBytes). */
  body: OperationResponse<T> | JsonBytes<OperationResponse<T>>;
  /**
   * Statements of the handler still in flight on its transaction, when it knew its answer
   * before they ran: an idempotent request sends its key's record with them, and COMMIT
   * follows, in the same round trip. Awaited once the transaction has ended: a failure
   * among them rolled it back and fails the request.
   */
  written?: Promise<unknown> | undefined;
  /**
   * Runs once the request's transaction has committed, and only then: what counts what
   * was stored (a send's metric). A send whose shared transaction aborted and that ran
   * again alone (group-commit.ts) counts once, by its second run's reply.
   */
  committed?: (() => void) | undefined;
}

export type Handler<T extends Operation, Prefetched = undefined> = (
  context: HandlerContext<T, Prefetched>,
) => Promise<Reply<T>>;

/**
 * The first read of a handler, inside the request's transaction. An idempotent request
 * sends it in the same round trip as its key check (the result is then discarded when
 * the key answers instead); the handler gets it as `prefetched`, and reads for itself
 * when that is undefined.
 */
export type Prefetch<T extends Operation, Prefetched> = (
  db: Queryable,
  input: OperationInput<T> & { tenant: Tenant },
) => Promise<Prefetched>;

/** 1 MB (docs/decisions.md). */
const JSON_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * The JSON body of the operations that take one (`operation.body`), and only of those: a
 * route without a body never answers 400 `invalid_json` or 413 `payload_too_large` for
 * one it would not read, so what a route can answer follows from its catalogue entry
 * (the OpenAPI document's statuses, errorsOf in @parley/schema).
 */
const readJsonBody = jsonBody({ limitBytes: JSON_BODY_LIMIT_BYTES, strict: false });

export function expressPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ":$1");
}

export interface BindOptions<T extends Operation, Prefetched> {
  prefetch?: Prefetch<T, Prefetched>;
  /**
   * Requests that arrive together share one transaction (group-commit.ts). Only
   * for a handler that refuses before it writes: a refused member's writes would commit.
   */
  groupCommit?: boolean;
}

/**
 * Binds one catalogue operation: its JSON body read where it takes one, then the test-only
 * check, scope, validation with the operation's schemas, idempotency where the operation
 * honours it, then the handler.
 */
export function bindOperation<T extends Operation, Prefetched = undefined>(
  router: Router,
  app: AppContext,
  operation: T,
  handler: Handler<T, Prefetched>,
  { prefetch, groupCommit = false }: BindOptions<T, Prefetched> = {},
) {
  const path = expressPath(operation.path);
  const groups =
    groupCommit && app.levers?.groupCommit !== false
      ? new TransactionGroups(app.db, {
          onSettled: (members, committed) => app.metrics?.transactionGroup(members, committed),
        })
      : undefined;
  const run: RequestHandler = async (req, res) => {
    res.locals.routeTemplate = `${req.baseUrl}${path}`;
    const { auth, tenant, input } = admit(operation, req);
    const execute = async (scoped: AppContext, prefetched: Prefetched | undefined): Promise<StoredResponse> => {
      const reply = await handler({ ...input, app: scoped, tenant, auth, req, res, prefetched });
      return {
        status: reply.status ?? operation.status,
        body: reply.body,
        written: reply.written,
        committed: reply.committed,
      };
    };
    const idempotencyKey = operation.idempotent ? readIdempotencyKey(req.get(IDEMPOTENCY_HEADER)) : undefined;
    if (!idempotencyKey) {
      const response = groups
        ? await groups.runOrAlone(undefined, (tx) => execute(boundTo(app, tx), undefined))
        : await execute(app, undefined);
      await response.written;
      response.committed?.();
      writeJson(res, response.status, response.body);
      return;
    }
    const outcome = await runIdempotent<Prefetched>(
      app.db,
      { key: idempotencyKey, tenant, method: req.method, path: req.path, body: req.body },
      (tx, prefetched) => execute(boundTo(app, tx), prefetched),
      prefetch && ((tx) => prefetch(tx, { ...input, tenant })),
      groups,
    );
    if (outcome.replayed) res.setHeader("Idempotent-Replayed", "true");
    else outcome.response.committed?.();
    const { status, body, text } = outcome.response;
    if (text === undefined) writeJson(res, status, body);
    else writeJsonText(res, status, text);
  };
  if (operation.body) router[operation.method](path, readJsonBody, run);
  else router[operation.method](path, run);
}

/**
 * The application with its database handle replaced by a transaction: services written
 * against `app.db` (whose own `transaction` calls become savepoints) then commit with the
 * idempotency record. A transaction offers every call a service makes on `app.db`.
 */
function boundTo(app: AppContext, tx: Queryable): AppContext {
  return { ...app, db: tx as unknown as Database, inTransaction: true };
}

/** The checks every operation passes before its handler: test-only routes, scope, input. */
function admit<T extends Operation>(operation: T, req: Request) {
  const auth = req.auth;
  if (!auth) throw new ApiError("authentication_required", "Authentication required.");
  if (operation.testOnly && auth.environment !== "test") {
    throw new ApiError("route_not_found", `No route ${req.method} ${req.path}`);
  }
  // After the test-only check: a live key must not learn that a test-only route exists.
  if (operation.scope) assertScope(auth, operation.scope);
  return { auth, tenant: tenantOf(auth), input: parseInput(operation, req) };
}

/** For an operation that answers with bytes: the handler writes the response itself. */
export function bindRawOperation<T extends Operation>(
  router: Router,
  operation: T,
  handler: (context: Omit<HandlerContext<T>, "app" | "prefetched">) => Promise<void>,
) {
  router[operation.method](expressPath(operation.path), async (req, res) => {
    const { auth, tenant, input } = admit(operation, req);
    await handler({ ...input, tenant, auth, req, res });
  });
}

/** A known path with another method: 405 with `Allow`, after every route is bound. */
export function bindMethodNotAllowed(router: Router, operations: readonly Operation[]) {
  const methodsByPath = new Map<string, Set<string>>();
  for (const operation of operations) {
    const methods = methodsByPath.get(operation.path) ?? new Set<string>();
    methods.add(operation.method.toUpperCase());
    methodsByPath.set(operation.path, methods);
  }
  for (const [path, methods] of methodsByPath) {
    const allow = [...methods].join(", ");
    router.all(expressPath(path), (req) => {
      throw new ApiError("method_not_allowed", `${req.method} is not allowed here; use ${allow}.`, {
        headers: { Allow: allow },
      });
    });
  }
}
