import {
  parseTwilioWebhook,
  type TwilioParams,
  type TwilioWebhookEvent,
  verifyTwilioSignature,
} from "@parley/channels";
import { channels } from "@parley/db";
import { and, eq, inArray, ne, sql } from "drizzle-orm";
import express from "express";
import type { AppContext } from "../context.js";
import { ApiError } from "../http/api-error.js";
import { rawBody } from "../http/body-limit.js";
import { sourceRateLimit } from "../http/rate-limit.js";
import { createOpenedSecrets, type OpenedChannel, type OpenedSecrets, openChannels } from "./opened-secrets.js";
import { countWebhookResults } from "./webhook-results.js";

/** Twilio's webhooks are a few kilobytes at most (1,600 characters of text, 10 media URLs); anything far larger is not Twilio. */
const TWILIO_BODY_LIMIT_BYTES = 64 * 1024;
/**
 * Auth Tokens a webhook's signature is checked against, one HMAC each. A number or Messaging
 * Service is connected once (`channels_provider_account_key`), so a webhook names at most
 * one channel per key it carries (3).
 */
const MAX_CANDIDATES = 3;
/** An empty TwiML document: Twilio sends no reply. */
const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>';

/**
 * What names the channel a webhook is for, read before its signature is checked (to find the
 * Auth Token to check it with), most specific first: the Messaging Service the number belongs
 * to, then the channel's own number, which is an incoming message's `To` and a status
 * callback's `From` (a request Parley ignores, an interim status, may be either).
 */
function accountKeys(params: TwilioParams, event: TwilioWebhookEvent): string[] {
  const value = (name: string) => {
    const raw = params[name];
    const first = typeof raw === "string" ? raw : raw?.[0];
    return first?.trim() || undefined;
  };
  const numbers = event.kind === "inbound" ? ["To"] : event.kind === "status" ? ["From"] : ["To", "From"];
  const keys = [value("MessagingServiceSid"), ...numbers.map(value)];
  return [...new Set(keys.filter((key): key is string => key !== undefined))];
}

/**
 * The connected Twilio SMS channels these keys name (one probe of the indexed
 * `provider_account`, however many channels there are), of the account the webhook names,
 * with their secrets opened. A disconnected channel's traffic is acknowledged and dropped,
 * like an unknown number's.
 */
async function candidateChannels(
  app: AppContext,
  secrets: OpenedSecrets,
  keys: string[],
  accountSid: string | null,
): Promise<OpenedChannel[]> {
  if (keys.length === 0 || !accountSid) return [];
  const rows = await app.db
    .select()
    .from(channels)
    .where(
      and(
        inArray(channels.providerAccount, keys),
        eq(channels.type, "sms"),
        eq(channels.provider, "twilio"),
        ne(channels.status, "disconnected"),
        sql`${channels.settings}->>'account_sid' = ${accountSid}`,
      ),
    )
    .limit(MAX_CANDIDATES);
  return openChannels(secrets, rows, app.logger);
}

/**
 * The channel the webhook is for, among those whose Auth Token signed it: the one of the
 * key listed first (a Messaging Service before a number). Null: no signature verifies.
 */
function signedFor(
  candidates: OpenedChannel[],
  keys: string[],
  url: string,
  params: TwilioParams,
  signature: string | undefined,
): OpenedChannel | null {
  const signed = candidates.filter(({ settings }) => {
    const token = settings.auth_token;
    return typeof token === "string" && verifyTwilioSignature(token, url, params, signature);
  });
  const rank = (channel: OpenedChannel) => keys.indexOf(channel.row.providerAccount ?? "");
  return signed.sort((a, b) => rank(a) - rank(b))[0] ?? null;
}

function invalidSignature(): ApiError {
  return new ApiError(
    "invalid_provider_signature",
    "X-Twilio-Signature is missing or does not verify with the Auth Token of the channel this webhook names.",
  );
}

/** The form's parameters, decoded; a name given more than once keeps every value, as Twilio signs them. */
function formParams(raw: Buffer): TwilioParams {
  const params: Record<string, string | string[]> = {};
  for (const [name, value] of new URLSearchParams(raw.toString("utf8"))) {
    const existing = params[name];
    params[name] = existing === undefined ? value : ([] as string[]).concat(existing, value);
  }
  return params;
}

function answerTwiml(res: express.Response) {
  res.status(200).type("text/xml").send(EMPTY_TWIML);
}

/**
 * Twilio's webhooks for SMS channels, keyless and public (`POST /v1/channels/webhooks/twilio`):
 * a number's incoming messages and the status callbacks of Parley's sends alike. Rate-limited
 * per source address; 64 KiB at most; without `X-Twilio-Signature` not one byte is read. The
 * webhook's Messaging Service or number finds its channel through the indexed
 * `provider_account`; the signature is checked with that channel's Auth Token over
 * `PUBLIC_BASE_URL` with the request's path and query (the URL Twilio requested) and the
 * parameters, and only then is anything stored: one job, in one statement; the worker does the
 * rest. Answered 200 with an empty TwiML `<Response/>` (no reply); a number no channel has is
 * answered so too and ignored, as for Meta; a missing or wrong signature is 403.
 */
export function twilioWebhookRoutes(app: AppContext): express.Router {
  const router = express.Router();
  const secrets = createOpenedSecrets(app.secretBox);
  router.use("/twilio", countWebhookResults(app, "twilio", { 403: "bad_signature" }));
  router.use("/twilio", sourceRateLimit(app.db, "twilio_webhook", app.smsWebhookRateLimitPerMinute));
  router.post(
    "/twilio",
    (req, _res, next) => {
      if (!req.get("x-twilio-signature")?.trim()) throw invalidSignature();
      next();
    },
    rawBody({ type: () => true, limitBytes: TWILIO_BODY_LIMIT_BYTES }),
    async (req, res) => {
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const params = req.is("application/x-www-form-urlencoded") ? formParams(raw) : {};
      const event = parseTwilioWebhook(params);
      const keys = accountKeys(params, event);
      const candidates = await candidateChannels(app, secrets, keys, event.accountSid);
      if (candidates.length === 0) {
        // About no connected number: nothing to check it with, nothing to store. 200, so an
        // account also serving numbers Parley does not is not retried.
        req.log.info("twilio webhook for no connected channel ignored");
        res.locals.webhookResult = "unknown_channel";
        answerTwiml(res);
        return;
      }
      const url = `${app.publicBaseUrl().replace(/\/+$/, "")}${req.originalUrl}`;
      const channel = signedFor(candidates, keys, url, params, req.get("x-twilio-signature"));
      if (!channel) throw invalidSignature();
      if (event.kind === "ignored") {
        res.locals.webhookResult = "ignored";
        answerTwiml(res);
        return;
      }
      const job = JSON.stringify({ channel_id: channel.row.id, params });
      await app.db.execute(
        sql`select graphile_worker.add_job('receive_twilio_webhook', ${job}::json, max_attempts => 10)`,
      );
      answerTwiml(res);
    },
  );
  return router;
}
