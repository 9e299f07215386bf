import {
  isMetaChannelFor,
  isMetaSignatureHeader,
  metaAccountIds,
  parseMetaWebhook,
  verifyMetaSignature,
} from "@parley/channels";
import { channels } from "@parley/db";
import { and, desc, eq, inArray, ne, type SQL, sql } from "drizzle-orm";
import express from "express";
import type { AppContext } from "../context.js";
import { ApiError } from "../http/api-error.js";
import { rawBody } from "../http/body-limit.js";
import { sourceRateLimit } from "../http/rate-limit.js";
import { createOpenedSecrets, type OpenedChannel, type OpenedSecrets, openChannels } from "./opened-secrets.js";
import { countWebhookResults } from "./webhook-results.js";

/** Meta sends at most a few hundred kilobytes per delivery; anything far larger is not Meta. */
const META_BODY_LIMIT_BYTES = 1024 * 1024;
/** Accounts looked up per delivery: Meta batches a few; the rest of a larger list is not read. */
const MAX_ACCOUNTS_PER_DELIVERY = 1000;
/**
 * App secrets a delivery's signature is checked against, one HMAC of the whole body each.
 * A genuine delivery comes from one app, so its accounts share one secret; a forged one
 * naming the accounts of many apps costs no more than this.
 */
const MAX_SECRETS_PER_DELIVERY = 4;

/**
 * Connected Meta channels with their secrets opened (through the cache). A channel whose
 * secrets this key cannot open (sealed under another key) is left out and logged, so it
 * cannot stop the others' webhooks.
 */
async function metaChannels(app: AppContext, secrets: OpenedSecrets, where?: SQL): Promise<OpenedChannel[]> {
  const rows = await app.db
    .select()
    .from(channels)
    .where(and(eq(channels.provider, "meta"), where));
  return openChannels(secrets, rows, app.logger);
}

/** The distinct app secrets of these channels, in the order read, with the channels each one signs for. */
function byAppSecret(candidates: OpenedChannel[]): Map<string, OpenedChannel[]> {
  const groups = new Map<string, OpenedChannel[]>();
  for (const channel of candidates) {
    const secret = channel.settings.app_secret;
    if (typeof secret !== "string" || secret.length === 0) continue;
    groups.set(secret, [...(groups.get(secret) ?? []), channel]);
  }
  return groups;
}

/** Known verify tokens are read again after this long, whatever else happened. */
const VERIFY_TOKENS_MAX_AGE_MS = 60_000;

/**
 * What changes when a Meta channel is connected, changed, disconnected or reconnected: its
 * latest change, one probe of `channels_meta_changes_idx` however many channels there are
 * (a count of them cost the handshake more with every channel). Channels are never
 * deleted; a row removed by hand is seen at the next full read (VERIFY_TOKENS_MAX_AGE_MS).
 */
async function metaChannelsVersion(app: AppContext): Promise<string> {
  const [row] = await app.db
    .select({ id: channels.id, updatedAt: sql<string>`${channels.updatedAt}::text` })
    .from(channels)
    .where(eq(channels.provider, "meta"))
    .orderBy(desc(channels.updatedAt), desc(channels.id))
    .limit(1);
  return row ? `${row.updatedAt}/${row.id}` : "";
}

/**
 * The verify tokens of the connected Meta channels, for the handshake, which names no
 * account to look up: kept in memory, and read again from every channel only when the
 * channels' version (their count and latest change) differs, or after a minute.
 */
function verifyTokenCheck(app: AppContext, secrets: OpenedSecrets): (token: string) => Promise<boolean> {
  let known = { version: "", loadedAt: Number.NEGATIVE_INFINITY, tokens: new Set<string>() };
  return async (token) => {
    const version = await metaChannelsVersion(app);
    if (version !== known.version || Date.now() - known.loadedAt > VERIFY_TOKENS_MAX_AGE_MS) {
      const loadedAt = Date.now();
      const opened = await metaChannels(app, secrets);
      const tokens = opened.flatMap(({ settings }) =>
        typeof settings.verify_token === "string" ? [settings.verify_token] : [],
      );
      // Read after the version: a channel connected in between is read again next time.
      known = { version, loadedAt, tokens: new Set(tokens) };
    }
    return known.tokens.has(token);
  };
}

function invalidSignature(): ApiError {
  return new ApiError("invalid_signature", "X-Hub-Signature-256 does not match any connected app secret.");
}

/**
 * Meta's webhooks for WhatsApp, Messenger and Instagram (`/v1/channels/webhooks/meta`):
 * the subscription handshake, then signed deliveries. Rate-limited per source address.
 * A delivery's account ids (entry ids, WhatsApp phone number ids) find its candidate
 * channels through the indexed `provider_account`; its raw bytes are then checked with one
 * HMAC per distinct app secret of those channels, and only then is anything stored: one
 * job, in one statement, answered 200 at once; the worker does the rest.
 */
export function metaWebhookRoutes(app: AppContext): express.Router {
  const router = express.Router();
  const secrets = createOpenedSecrets(app.secretBox);
  const isVerifyToken = verifyTokenCheck(app, secrets);
  router.use("/meta", countWebhookResults(app, "meta", { 401: "bad_signature", 403: "bad_verify_token" }));
  router.use("/meta", sourceRateLimit(app.db, "meta_webhook", app.metaWebhookRateLimitPerMinute));

  router.get("/meta", async (req, res) => {
    const mode = req.query["hub.mode"];
    const token = req.query["hub.verify_token"];
    const challenge = req.query["hub.challenge"];
    if (mode !== "subscribe" || typeof token !== "string" || typeof challenge !== "string") {
      throw new ApiError("invalid_verify_token", "Expected hub.mode=subscribe, hub.verify_token and hub.challenge.");
    }
    if (!(await isVerifyToken(token)))
      throw new ApiError("invalid_verify_token", "No connected channel has this verify token.");
    res.locals.webhookResult = "verified";
    res.status(200).type("text/plain").send(challenge);
  });

  router.post(
    "/meta",
    (req, _res, next) => {
      // Meta signs every delivery: without a well-formed signature, not one byte is read.
      if (!isMetaSignatureHeader(req.get("x-hub-signature-256"))) throw invalidSignature();
      next();
    },
    rawBody({ type: () => true, limitBytes: META_BODY_LIMIT_BYTES }),
    async (req, res) => {
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const signature = req.get("x-hub-signature-256");
      const payload = parseJson(raw);
      const accountIds = metaAccountIds(payload, MAX_ACCOUNTS_PER_DELIVERY);
      const candidates =
        accountIds.length > 0
          ? await metaChannels(
              app,
              secrets,
              // A disconnected channel's traffic is acknowledged and dropped, like an unknown account's.
              and(inArray(channels.providerAccount, accountIds), ne(channels.status, "disconnected")),
            )
          : [];
      if (candidates.length === 0) {
        // About no connected account: nothing to check it with, nothing to store. 200, so
        // an app also subscribed to accounts Parley does not serve is not retried forever.
        req.log.info({ accounts: accountIds.length }, "meta webhook for no connected channel ignored");
        res.locals.webhookResult = "unknown_channel";
        res.status(200).type("text/plain").send("EVENT_RECEIVED");
        return;
      }
      const groups = [...byAppSecret(candidates)];
      if (groups.length > MAX_SECRETS_PER_DELIVERY) {
        req.log.warn(
          { secrets: groups.length },
          "meta webhook names the accounts of too many apps; checking the first",
        );
      }
      const signedFor = groups
        .slice(0, MAX_SECRETS_PER_DELIVERY)
        .filter(([secret]) => verifyMetaSignature(raw, signature, secret))
        .flatMap(([, group]) => group);
      if (signedFor.length === 0) throw invalidSignature();
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
        res.locals.webhookResult = "unknown_channel";
      }
      res.status(200).type("text/plain").send("EVENT_RECEIVED");
    },
  );
  return router;
}

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch {
    throw new ApiError("invalid_json", "The webhook body is not valid JSON.");
  }
}
