import { isMetaChannelFor, parseMetaWebhook, verifyMetaSignature } from "@parley/channels";
import { channelSettings } from "@parley/core";
import { channels } from "@parley/db";
import { eq, sql } from "drizzle-orm";
import express from "express";
import type { AppContext } from "../context.js";
import { ApiError } from "../http/api-error.js";

/** Meta sends at most a few hundred kilobytes per delivery; anything far larger is not Meta. */
const META_BODY_LIMIT = "1mb";

type ChannelRow = typeof channels.$inferSelect;

/**
 * Every connected Meta channel with its secrets opened. A channel whose secrets this
 * key cannot open (sealed under another key) is left out and logged, so it cannot stop
 * the others' webhooks.
 */
async function metaChannels(app: AppContext): Promise<{ row: ChannelRow; settings: Record<string, unknown> }[]> {
  const rows = await app.db.select().from(channels).where(eq(channels.provider, "meta"));
  return rows.flatMap((row) => {
    try {
      return [{ row, settings: channelSettings(app.secretBox, row) }];
    } catch (error) {
      app.logger.error({ channelId: row.id, reason: (error as Error).message }, "channel secrets cannot be opened");
      return [];
    }
  });
}

/**
 * Meta's webhooks for WhatsApp, Messenger and Instagram (`/v1/channels/webhooks/meta`):
 * the subscription handshake, then signed deliveries. A delivery is checked against the
 * connected apps' secrets over the raw bytes before anything is read, then stored as a
 * job in one statement and answered 200 at once; the worker does the rest.
 */
export function providerWebhookRoutes(app: AppContext): express.Router {
  const router = express.Router();
  router.get("/meta", async (req, res) => {
    const mode = req.query["hub.mode"];
    const token = req.query["hub.verify_token"];
    const challenge = req.query["hub.challenge"];
    if (mode !== "subscribe" || typeof token !== "string" || typeof challenge !== "string") {
      throw new ApiError("invalid_verify_token", "Expected hub.mode=subscribe, hub.verify_token and hub.challenge.");
    }
    const known = (await metaChannels(app)).some((channel) => channel.settings.verify_token === token);
    if (!known) throw new ApiError("invalid_verify_token", "No connected channel has this verify token.");
    res.status(200).type("text/plain").send(challenge);
  });

  router.post("/meta", express.raw({ type: () => true, limit: META_BODY_LIMIT }), async (req, res) => {
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const signature = req.get("x-hub-signature-256");
    const candidates = await metaChannels(app);
    const signedFor = candidates.filter(
      (channel) =>
        typeof channel.settings.app_secret === "string" &&
        verifyMetaSignature(raw, signature, channel.settings.app_secret),
    );
    if (signedFor.length === 0) {
      throw new ApiError("invalid_signature", "X-Hub-Signature-256 does not match any connected app secret.");
    }
    const payload = parseJson(raw);
    const items = parseMetaWebhook(payload);
    // Only the channels of the app that signed: one app cannot speak for another's accounts.
    const channelIds = signedFor
      .filter((channel) => items.some((item) => isMetaChannelFor(channel.row, item.channel)))
      .map((channel) => channel.row.id);
    if (channelIds.length > 0) {
      const job = JSON.stringify({ channel_ids: channelIds, payload });
      await app.db.execute(
        sql`select graphile_worker.add_job('receive_meta_webhook', ${job}::json, max_attempts => 10)`,
      );
    } else {
      req.log.info({ items: items.length }, "meta webhook for no connected channel ignored");
    }
    res.status(200).type("text/plain").send("EVENT_RECEIVED");
  });
  return router;
}

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch {
    throw new ApiError("invalid_json", "The webhook body is not valid JSON.");
  }
}
