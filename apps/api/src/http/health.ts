import { latestMigrationMillis, migrationsApplied } from "@parley/db";
import express from "express";
import type { AppContext } from "../context.js";
import { ApiError } from "./api-error.js";

/** A readiness probe that gets no answer from PostgreSQL within this long says "not ready". */
const READINESS_QUERY_TIMEOUT_MS = 2_000;

function notReady(message: string): ApiError {
  return new ApiError("service_unavailable", message, { headers: { "Retry-After": "2" } });
}

async function checkDatabase(app: AppContext, latestMillis: number): Promise<ApiError | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), READINESS_QUERY_TIMEOUT_MS);
  });
  try {
    const applied = await Promise.race([migrationsApplied(app.db, latestMillis), timedOut]);
    if (applied === "timeout") return notReady("Not ready: the database does not answer.");
    return applied ? undefined : notReady("Not ready: database migrations are pending.");
  } catch {
    return notReady("Not ready: the database is unreachable.");
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `/healthz`: liveness, the process answers (never looks at the database: a restart would
 * not fix it). `/readyz`: whether to send this process traffic: 503 while PostgreSQL is
 * unreachable, while migrations of this release are pending, and once shutdown began.
 */
export function healthRoutes(app: AppContext): express.Router {
  const router = express.Router();
  const latestMillis = latestMigrationMillis();
  router.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  router.get("/readyz", async (_req, res) => {
    if (app.shuttingDown?.()) throw notReady("Not ready: the process is shutting down.");
    const problem = await checkDatabase(app, latestMillis);
    if (problem) throw problem;
    res.json({ status: "ready" });
  });
  return router;
}
