import {
  apiTimestamp,
  assertPublicHost,
  attemptWebhook,
  ForbiddenAddressError,
  serializeDelivery,
  type WebhookEndpointRow,
} from "@parley/core";
import { events, inTenant, newId, webhookDeliveries, webhookEndpoints } from "@parley/db";
import type { api, OperationInput, WebhookDelivery, WebhookEndpoint } from "@parley/schema";
import { and, count, desc, eq, sql } from "drizzle-orm";
import { type AppContext, withTransaction } from "../context.js";
import { ApiError, notFound, validationError } from "../http/api-error.js";
import type { Tenant } from "../http/auth.js";
import { afterPosition, listKeyOf, toPage } from "../http/pagination.js";
import { randomBase62 } from "../organizations/api-keys.js";

type CreateInput = OperationInput<typeof api.webhooks.create>["body"];
type UpdateInput = OperationInput<typeof api.webhooks.update>["body"];
type PageQuery = OperationInput<typeof api.webhooks.list>["query"];

const ROTATION_OVERLAP_MS = 24 * 3_600_000;

export function generateSigningSecret(): string {
  return `whsec_${randomBase62(40)}`;
}

export function maskSecret(secret: string): string {
  return `whsec_****${secret.slice(-4)}`;
}

export function serializeEndpoint(row: WebhookEndpointRow, options: { revealSecret?: boolean } = {}): WebhookEndpoint {
  return {
    object: "webhook_endpoint",
    id: row.id,
    url: row.url,
    description: row.description,
    events: row.events as WebhookEndpoint["events"],
    environment: row.environment,
    enabled: row.enabled,
    disabled_reason: row.disabledReason,
    secret: options.revealSecret ? row.secret : maskSecret(row.secret),
    failure_count: row.failureCount,
    created_at: apiTimestamp(row.createdAt),
    updated_at: apiTimestamp(row.updatedAt),
  };
}

/** In production an endpoint must resolve to public addresses only; development allows local receivers. */
async function checkUrl(app: AppContext, url: string) {
  if (!app.blockPrivateWebhookAddresses) return;
  try {
    await assertPublicHost(new URL(url).hostname);
  } catch (error) {
    const reason = error instanceof ForbiddenAddressError ? error.message : "does not resolve";
    throw validationError("url", `must reach a public address: ${reason}`);
  }
}

async function findEndpoint(app: AppContext, tenant: Tenant, id: string) {
  const [row] = await app.db
    .select()
    .from(webhookEndpoints)
    .where(and(inTenant(webhookEndpoints, tenant), eq(webhookEndpoints.id, id)));
  if (!row) throw notFound("webhook endpoint", id);
  return row;
}

export async function listEndpointsPage(app: AppContext, tenant: Tenant, query: PageQuery) {
  const listKey = listKeyOf("webhooks.list", tenant);
  const after = app.cursors.decode(listKey, query.after);
  const rows = await app.db
    .select()
    .from(webhookEndpoints)
    .where(and(inTenant(webhookEndpoints, tenant), afterPosition(webhookEndpoints, after)))
    .orderBy(desc(webhookEndpoints.createdAt), desc(webhookEndpoints.id))
    .limit(query.limit + 1);
  return toPage(rows, query.limit, { codec: app.cursors, listKey }, (page) =>
    page.map((row) => serializeEndpoint(row)),
  );
}

/**
 * The environment is the key's; an `environment` in the body is ignored. An environment
 * holds at most `webhookEndpointsPerEnvironment` endpoints, enabled or not (each is one
 * more POST per event); the count and the insert run under a lock of the environment, so
 * racing creations cannot pass it.
 */
export async function createEndpoint(app: AppContext, tenant: Tenant, input: CreateInput): Promise<WebhookEndpoint> {
  await checkUrl(app, input.url);
  const row = await withTransaction(app, async (tx) => {
    await tx.execute(
      sql`select pg_advisory_xact_lock(hashtextextended(${`webhook_endpoints/${tenant.organizationId}/${tenant.environment}`}, 0))`,
    );
    const [held] = await tx.select({ count: count() }).from(webhookEndpoints).where(inTenant(webhookEndpoints, tenant));
    const limit = app.webhookEndpointsPerEnvironment;
    if ((held?.count ?? 0) >= limit) {
      const message = `this environment already has ${limit} webhook endpoints, the most it may hold; delete one first`;
      throw new ApiError("validation_error", `url: ${message}`, { param: "url", details: [{ param: "url", message }] });
    }
    const [inserted] = await tx
      .insert(webhookEndpoints)
      .values({
        id: newId("webhook"),
        ...tenant,
        url: input.url,
        description: input.description ?? null,
        events: [...new Set(input.events)],
        enabled: input.enabled ?? true,
        secret: generateSigningSecret(),
      })
      .returning();
    return inserted;
  });
  if (!row) throw new Error("webhook endpoint insert returned nothing");
  return serializeEndpoint(row, { revealSecret: true });
}

export async function getEndpoint(app: AppContext, tenant: Tenant, id: string) {
  return serializeEndpoint(await findEndpoint(app, tenant, id));
}

export async function updateEndpoint(app: AppContext, tenant: Tenant, id: string, input: UpdateInput) {
  const current = await findEndpoint(app, tenant, id);
  if (input.url !== undefined) await checkUrl(app, input.url);
  const reenabled = input.enabled === true && !current.enabled;
  const [row] = await app.db
    .update(webhookEndpoints)
    .set({
      ...(input.url !== undefined ? { url: input.url } : {}),
      ...(input.description !== undefined ? { description: input.description } : {}),
      ...(input.events !== undefined ? { events: [...new Set(input.events)] } : {}),
      ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
      ...(input.enabled === true ? { failureCount: 0, firstFailureAt: null, disabledReason: null } : {}),
      updatedAt: new Date(),
    })
    .where(eq(webhookEndpoints.id, current.id))
    .returning();
  if (!row) throw notFound("webhook endpoint", id);
  if (reenabled) app.logger.info({ webhookEndpointId: row.id }, "webhook endpoint re-enabled");
  return serializeEndpoint(row);
}

export async function deleteEndpoint(app: AppContext, tenant: Tenant, id: string) {
  const current = await findEndpoint(app, tenant, id);
  // Deliveries cascade with the endpoint; pending attempts find no endpoint and send nothing.
  await app.db.delete(webhookEndpoints).where(eq(webhookEndpoints.id, current.id));
  return { object: "webhook_endpoint" as const, id: current.id, deleted: true as const };
}

/** A new secret, shown this once; the old one keeps signing for 24 hours. */
export async function rotateSecret(app: AppContext, tenant: Tenant, id: string) {
  const current = await findEndpoint(app, tenant, id);
  const [row] = await app.db
    .update(webhookEndpoints)
    .set({
      secret: generateSigningSecret(),
      previousSecret: current.secret,
      previousSecretExpiresAt: new Date(Date.now() + ROTATION_OVERLAP_MS),
      updatedAt: new Date(),
    })
    .where(eq(webhookEndpoints.id, current.id))
    .returning();
  if (!row) throw notFound("webhook endpoint", id);
  return serializeEndpoint(row, { revealSecret: true });
}

export async function listDeliveriesPage(app: AppContext, tenant: Tenant, id: string, query: PageQuery) {
  const endpoint = await findEndpoint(app, tenant, id);
  const listKey = listKeyOf("webhooks.deliveries.list", tenant, endpoint.id);
  const after = app.cursors.decode(listKey, query.after);
  const rows = await app.db
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.endpointId, endpoint.id), afterPosition(webhookDeliveries, after)))
    .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
    .limit(query.limit + 1);
  return toPage(rows, query.limit, { codec: app.cursors, listKey }, (page) => page.map(serializeDelivery));
}

async function attemptNow(app: AppContext, endpoint: WebhookEndpointRow, eventId: string): Promise<WebhookDelivery> {
  const [last] = await app.db
    .select({ attempt: webhookDeliveries.attempt })
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.endpointId, endpoint.id), eq(webhookDeliveries.eventId, eventId)))
    .orderBy(desc(webhookDeliveries.attempt))
    .limit(1);
  const row = await attemptWebhook(app.db, app.webhookSender, {
    endpointId: endpoint.id,
    eventId,
    attempt: (last?.attempt ?? 0) + 1,
    automatic: false,
    fastRetry: false,
  });
  if (!row) throw notFound("webhook endpoint", endpoint.id);
  return serializeDelivery(row);
}

/** A signed `webhook.test` event, sent now to this endpoint only (not fanned out, not retried). */
export async function sendTestEvent(app: AppContext, tenant: Tenant, id: string): Promise<WebhookDelivery> {
  const endpoint = await findEndpoint(app, tenant, id);
  const eventId = newId("event");
  await app.db.insert(events).values({
    id: eventId,
    ...tenant,
    type: "webhook.test",
    data: { webhook_endpoint: { object: "webhook_endpoint", id: endpoint.id } },
  });
  return attemptNow(app, endpoint, eventId);
}

export async function retryDelivery(app: AppContext, tenant: Tenant, id: string, deliveryId: string) {
  const endpoint = await findEndpoint(app, tenant, id);
  const [delivery] = await app.db
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.endpointId, endpoint.id)));
  if (!delivery) throw notFound("webhook delivery", deliveryId);
  return attemptNow(app, endpoint, delivery.eventId);
}
