import { apiKeys, organizations } from "@parley/db";
import { api, type Scope } from "@parley/schema";
import { eq } from "drizzle-orm";
import type { Router } from "express";
import type { AppContext } from "../context.js";
import { notFound } from "../http/api-error.js";
import { bindOperation } from "../http/route.js";

/** `GET /v1/api-keys/current`: the calling key describes itself, secret excluded. */
export function apiKeyRoutes(router: Router, app: AppContext) {
  bindOperation(router, app, api.apiKeys.current, async ({ auth }) => {
    const [row] = await app.db
      .select({ key: apiKeys, organization: organizations })
      .from(apiKeys)
      .innerJoin(organizations, eq(organizations.id, apiKeys.organizationId))
      .where(eq(apiKeys.id, auth.keyId));
    if (!row) throw notFound("API key", auth.keyId);
    return {
      body: {
        object: "api_key" as const,
        id: row.key.id,
        environment: row.key.environment,
        scopes: row.key.scopes as Scope[],
        redacted_key: `parley_${row.key.environment}_****${row.key.lastFour}`,
        organization: { object: "organization" as const, id: row.organization.id, name: row.organization.name },
      },
    };
  });
}
