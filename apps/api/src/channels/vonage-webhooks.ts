import { type VonageSignatureFailure, verifyVonageSignature, vonageWebhookHints } from "@parley/channels";
import { channels } from "@parley/db";
import { and, eq, ne, sql } from "drizzle-orm";
import express from "express";
import type { AppContext } from "../context.js";
import { ApiError } from "../http/api-error.js";
import { rawBody } from "../http/body-limit.js";
import { sourceRateLimit } from "../http/rate-limit.js";
import { createOpenedSecrets, type OpenedSecrets } from "./opened-secrets.js";
import { countWebhookResults } from "./webhook-results.js";

/** An SMS webhook is a few hundred bytes (the text is at most a few kilobytes); anything far larger is not Vonage. */
const VONAGE_BODY_LIMIT_BYTES = 64 * 1024;
/**
 * Channels whose signature secret a webhook is checked against, one HMAC each. A number is
 * connected once (`channels_provider_account_key`), so a webhook names one channel at most;
 * the bound holds should that ever change.
 */
const MAX_CANDIDATES = 4;
/** What Vonage sends: `Authorization: Bearer <header>.<claims>.<signature>`; nothing else is read further. */
const BEARER_TOKEN = /^Bearer +[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]* *$/i;

type ChannelRow = typeof channels.$inferSelect;
type OpenedChannel = { row: ChannelRow; settings: Record<string, unknown> };

/**
 * The channel's `provider_account` from Vonage's spelling of its number, as the column keeps
 * it (migration 0024): digits given a leading `+` (`447700900000` is `+447700900000`, a short
 * code `12345` is `+12345`), an alphanumeric sender id as written.
 */
function accountKey(number: string): string {
  return /^\d+$/.test(number) ? `+${number}` : number;
}

/**
 * The connected Vonage SMS channels of this number, through the indexed `provider_account`
 * (one probe, whatever the number of channels), their secrets opened (through
 * the cache). A channel whose secrets this key cannot open is left out and logged, so it
 * cannot stop the others' webhooks. The application the token names is not a filter here:
 * a token naming another application than the number's channel is refused by the signature
 * check (`wrong_application`), where a filter would have taken it for an unknown number.
 */
async function candidateChannels(app: AppContext, secrets: OpenedSecrets, number: string): Promise<OpenedChannel[]> {
  const rows = await app.db
    .select()
    .from(channels)
    .where(
      and(
        eq(channels.providerAccount, accountKey(number)),
        eq(channels.type, "sms"),
        eq(channels.provider, "vonage"),
        // A disconnected channel's traffic is acknowledged and dropped, like an unknown number's.
        ne(channels.status, "disconnected"),
      ),
    )
    .limit(MAX_CANDIDATES);
  return rows.flatMap((row) => {
    try {
      const opened = row.secretSettings ? secrets.open(row.secretSettings) : {};
      return [{ row, settings: { ...row.settings, ...opened } }];
    } catch (error) {
      app.logger.error({ channelId: row.id, reason: (error as Error).message }, "channel secrets cannot be opened");
      return [];
    }
  });
}

/** The first candidate whose signature secret (and application) the webhook's token verifies with. */
async function signedFor(
  raw: Buffer,
  authorization: string,
  candidates: OpenedChannel[],
): Promise<{ channel: OpenedChannel } | { channel: null; failure: VonageSignatureFailure }> {
  let failure: VonageSignatureFailure = "bad_signature";
  for (const candidate of candidates) {
    const secret = candidate.settings.signature_secret;
    const applicationId = candidate.settings.application_id;
    if (typeof secret !== "string" || secret.length === 0) continue;
    const check = await verifyVonageSignature(
      raw,
      authorization,
      secret,
      typeof applicationId === "string" ? { applicationId } : {},
    );
    if (check.valid) return { channel: candidate };
    failure = check.reason;
  }
  return { channel: null, failure };
}

function invalidSignature(): ApiError {
  return new ApiError(
    "invalid_provider_signature",
    "The Authorization token is not a signed token that verifies with the signature secret of the channel this webhook names.",
  );
}

/**
 * Vonage's Messages API webhooks for SMS channels, keyless and public:
 * `POST /v1/channels/webhooks/vonage/inbound` (inbound SMS) and `.../vonage/status` (status
 * callbacks). Rate-limited per source address; 64 KiB at most. The number the webhook names
 * (an inbound message's `to`, a status's `from`) finds its channel through the indexed
 * `provider_account`; the signed token (`Authorization: Bearer`, HS256 with the channel's
 * signature secret, `payload_hash` over the raw bytes) is checked, and only then is anything
 * stored: one job, in one statement, answered 200 at once; the worker does the rest.
 *
 * Vonage retries only what is answered 429 or 5xx. A webhook without `Authorization` is
 * answered 503: Vonage's advice for its rare unsigned callbacks, so the retry comes signed.
 * A bad token is 403 (not retried), as for Twilio; a number no channel has is 200 and ignored,
 * as for Meta. The unsigned 503 counts as an `error` in `parley_provider_webhooks_total`.
 */
export function vonageWebhookRoutes(app: AppContext): express.Router {
  const router = express.Router();
  const secrets = createOpenedSecrets(app.secretBox);
  router.use("/vonage", countWebhookResults(app, "vonage", { 403: "bad_signature" }));
  router.use("/vonage", sourceRateLimit(app.db, "vonage_webhook", app.smsWebhookRateLimitPerMinute));

  const receive: express.RequestHandler[] = [
    (req, _res, next) => {
      // Vonage signs every callback: without a well-formed token, not one byte is read.
      const authorization = req.get("authorization")?.trim();
      if (!authorization) {
        req.log.info("vonage webhook without Authorization answered 503, for Vonage to retry it signed");
        throw new ApiError("service_unavailable", "Vonage webhooks are signed: retry with a signed token.", {
          headers: { "Retry-After": "5" },
        });
      }
      if (!BEARER_TOKEN.test(authorization)) throw invalidSignature();
      next();
    },
    rawBody({ type: () => true, limitBytes: VONAGE_BODY_LIMIT_BYTES }),
    async (req, res) => {
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const authorization = req.get("authorization") ?? "";
      const payload = parseJson(raw);
      const { number } = vonageWebhookHints(payload, authorization);
      const candidates = number ? await candidateChannels(app, secrets, number) : [];
      if (candidates.length === 0) {
        // About no connected number: nothing to check it with, nothing to store. 200, so an
        // application also serving numbers Parley does not is not retried for a day.
        req.log.info("vonage webhook for no connected channel ignored");
        res.locals.webhookResult = "unknown_channel";
        res.status(200).type("text/plain").send("OK");
        return;
      }
      const signed = await signedFor(raw, authorization, candidates);
      if (signed.channel === null) {
        req.log.info({ reason: signed.failure }, "vonage webhook refused");
        throw invalidSignature();
      }
      const job = JSON.stringify({ channel_id: signed.channel.row.id, body: payload });
      await app.db.execute(
        sql`select graphile_worker.add_job('receive_vonage_webhook', ${job}::json, max_attempts => 10)`,
      );
      res.status(200).type("text/plain").send("OK");
    },
  ];
  router.post("/vonage/inbound", ...receive);
  router.post("/vonage/status", ...receive);
  return router;
}

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch {
    throw new ApiError("invalid_json", "The webhook body is not valid JSON.");
  }
}
