import { withTraceContext } from "@parley/tracing";
import { request } from "undici";
import { TemporaryChannelError } from "../../adapter.js";
import { type ProviderRefusal, providerCallSpan } from "../../provider-span.js";
import { readAtMost } from "../../read-at-most.js";
import { networkFault, TwilioApiError, twilioFailure } from "./errors.js";
import { type TwilioCredentials, type TwilioSmsSettings, twilioCredentials } from "./settings.js";

/** Where Twilio's REST API is reached: configurable so tests (and proxies) can stand in. */
export interface TwilioOptions {
  /** `TWILIO_API_BASE_URL`, default `https://api.twilio.com`. */
  baseUrl: string;
  /** Per request, after which the attempt counts as a temporary fault. */
  timeoutMs: number;
}

export const TWILIO_API_BASE_URL = "https://api.twilio.com";

export const defaultTwilioOptions: TwilioOptions = { baseUrl: TWILIO_API_BASE_URL, timeoutMs: 15_000 };

export interface SendMessageInput {
  /** The recipient, E.164. */
  to: string;
  /** The text; may be left out when `mediaUrls` has one. */
  body?: string | null;
  /** Public URLs Twilio fetches and sends as MMS (up to 10, 5 MB in all). */
  mediaUrls?: readonly string[];
  /** Where Twilio POSTs the message's status changes. */
  statusCallback?: string;
}

/** What Twilio answered with HTTP 201: the Message resource's `sid` (SM... or MM...) and initial `status`. */
export interface SentMessage {
  sid: string;
  /** `queued` from a number; `accepted` (or `scheduled`) through a Messaging Service. */
  status: string;
}

export interface CheckedAccount {
  accountSid: string;
  /** The Account's `status` (`active`); null when checked through an API key (see `checkAccount`). */
  status: string | null;
}

export interface MediaDownload {
  bytes: Buffer;
  contentType: string | null;
}

/**
 * The few calls Parley makes to Twilio's Programmable Messaging REST API. Each resolves with
 * Twilio's answer, throws a `TemporaryChannelError` when a retry may succeed, a
 * `TwilioAuthError` when the credentials were refused, and a `TwilioApiError` (Twilio's code
 * and message) for any other refusal. Credentials travel in the `Authorization` header only:
 * never in a URL, a log line or an error message.
 */
export interface TwilioClient {
  /** `POST /2010-04-01/Accounts/{AccountSid}/Messages.json`, form-encoded. */
  sendMessage(input: SendMessageInput): Promise<SentMessage>;
  /**
   * Whether the credentials work, before they are stored. With the Auth Token:
   * `GET /2010-04-01/Accounts/{AccountSid}.json`, and the account must be `active`. With an
   * API key: `GET .../Messages.json?PageSize=1`, since a Standard API key may not read the
   * Account resource (only a Main key may).
   */
  checkAccount(): Promise<CheckedAccount>;
  /**
   * The bytes of a media URL Twilio gave out (`MediaUrl0` of an incoming message). The
   * credentials go only to Twilio's API host (media URLs need them when "Enforce HTTP Auth on
   * Media URLs" is on); its redirect to the CDN is followed without them. Larger files fail
   * with `media_too_large` without being read to the end.
   */
  fetchMedia(url: string, limits?: { maxBytes?: number }): Promise<MediaDownload>;
}

type Method = "GET" | "POST";

const MAX_REDIRECTS = 5;

export function createTwilioClient(options: TwilioOptions, settings: TwilioSmsSettings): TwilioClient {
  const credentials = twilioCredentials(settings);
  const authorization = basic(credentials);
  const account = `/2010-04-01/Accounts/${encodeURIComponent(credentials.accountSid)}`;
  const url = (path: string) => `${options.baseUrl.replace(/\/+$/, "")}${path}`;

  return {
    async sendMessage(input) {
      const form = new URLSearchParams();
      form.append("To", input.to);
      if (settings.messaging_service_sid !== undefined)
        form.append("MessagingServiceSid", settings.messaging_service_sid);
      else if (settings.from !== undefined) form.append("From", settings.from);
      if (input.body) form.append("Body", input.body);
      for (const mediaUrl of input.mediaUrls ?? []) form.append("MediaUrl", mediaUrl);
      if (input.statusCallback) form.append("StatusCallback", input.statusCallback);
      const answer = await call(options, "POST", url(`${account}/Messages.json`), authorization, form);
      const sid = stringField(answer, "sid");
      // Not retried: Twilio may have queued the message, and a duplicate to the customer is worse.
      if (!sid) throw unexpected("Twilio accepted the message without giving its sid");
      return { sid, status: stringField(answer, "status") ?? "queued" };
    },

    async checkAccount() {
      if (credentials.username !== credentials.accountSid) {
        await call(options, "GET", url(`${account}/Messages.json?PageSize=1`), authorization);
        return { accountSid: credentials.accountSid, status: null };
      }
      const answer = await call(options, "GET", url(`${account}.json`), authorization);
      const status = stringField(answer, "status");
      if (status !== null && status !== "active") {
        throw new TwilioApiError(`The Twilio account ${credentials.accountSid} is ${status}, not active`, {
          parleyCode: "account_not_active",
        });
      }
      return { accountSid: credentials.accountSid, status };
    },

    fetchMedia(mediaUrl, limits = {}) {
      const apiHost = new URL(options.baseUrl);
      return providerCallSpan("Twilio media download", "GET", mediaUrl, twilioRefusal, () =>
        download(options, mediaUrl, limits.maxBytes ?? Number.POSITIVE_INFINITY, (target) =>
          isTwilioApiHost(target, apiHost) ? authorization : {},
        ),
      );
    },
  };
}

/** `Authorization: Basic` of the account (or API key): the only place a secret goes. */
function basic(credentials: TwilioCredentials): Record<string, string> {
  const token = Buffer.from(`${credentials.username}:${credentials.password}`).toString("base64");
  return { authorization: `Basic ${token}` };
}

/**
 * Whether a URL is on Twilio's REST API host, where the account's credentials may go: the
 * configured base URL's origin, or Twilio's own `api.twilio.com` (and regional
 * `api.<edge>.<region>.twilio.com`) over HTTPS. Never a CDN or any other host.
 */
export function isTwilioApiHost(url: URL, apiBase: URL): boolean {
  if (url.origin === apiBase.origin) return true;
  return url.protocol === "https:" && /^api(\.[a-z0-9-]+)*\.twilio\.com$/.test(url.hostname) && url.port === "";
}

function call(
  options: TwilioOptions,
  method: Method,
  url: string,
  auth: Record<string, string>,
  form?: URLSearchParams,
): Promise<unknown> {
  return providerCallSpan(`Twilio API ${method}`, method, url, twilioRefusal, () =>
    withTimeout(options, async (signal) => {
      const headers: Record<string, string> = { ...auth, accept: "application/json" };
      if (form) headers["content-type"] = "application/x-www-form-urlencoded";
      const response = await request(url, {
        method,
        headers: withTraceContext(headers),
        body: form?.toString(),
        signal,
      });
      const parsed = parseJson(await response.body.text());
      if (response.statusCode < 200 || response.statusCode >= 300) throw twilioFailure(response.statusCode, parsed);
      if (parsed === undefined) throw unexpected(`Twilio answered HTTP ${response.statusCode} without JSON`);
      return parsed;
    }),
  );
}

async function download(
  options: TwilioOptions,
  start: string,
  maxBytes: number,
  authFor: (url: URL) => Record<string, string>,
): Promise<MediaDownload> {
  return withTimeout(options, async (signal) => {
    let target = parseUrl(start);
    for (let redirects = 0; ; redirects++) {
      const response = await request(target, {
        method: "GET",
        headers: withTraceContext(authFor(target)),
        signal,
      });
      const location = headerOf(response.headers.location);
      if (response.statusCode >= 300 && response.statusCode < 400 && location) {
        await response.body.dump();
        if (redirects >= MAX_REDIRECTS) throw unexpected(`More than ${MAX_REDIRECTS} redirects from ${target.host}`);
        target = parseUrl(location, target);
        continue;
      }
      if (response.statusCode < 200 || response.statusCode >= 300) {
        throw twilioFailure(response.statusCode, parseJson(await response.body.text()));
      }
      if (Number(response.headers["content-length"]) > maxBytes) {
        // Drops the connection rather than reading a file that will be refused.
        await response.body.dump({ limit: 1 });
        throw tooLarge(maxBytes);
      }
      return {
        bytes: await readAtMost(response.body, maxBytes, tooLarge),
        contentType: headerOf(response.headers["content-type"]),
      };
    }
  });
}

function tooLarge(maxBytes: number): TwilioApiError {
  return new TwilioApiError(`The file is larger than ${maxBytes} bytes`, { parleyCode: "media_too_large" });
}

function unexpected(message: string): TwilioApiError {
  return new TwilioApiError(message, { parleyCode: "unexpected_response" });
}

function parseUrl(url: string, base?: URL): URL {
  try {
    const parsed = new URL(url, base);
    if (parsed.protocol === "https:" || parsed.protocol === "http:") return parsed;
  } catch {
    // Refused below.
  }
  throw new TwilioApiError("The media URL is not an http(s) URL", { parleyCode: "media_url_invalid" });
}

/** A refusal of Twilio's API as a span records it (see providerCallSpan). */
function twilioRefusal(error: unknown): ProviderRefusal | undefined {
  return error instanceof TwilioApiError ? { status: error.status, code: error.toProviderError().code } : undefined;
}

/** Runs one exchange under the configured deadline; no (whole) answer in time is a temporary fault. */
async function withTimeout<T>(options: TwilioOptions, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const signal = AbortSignal.timeout(options.timeoutMs);
  try {
    return await run(signal);
  } catch (error) {
    if (error instanceof TwilioApiError || error instanceof TemporaryChannelError) throw error;
    throw networkFault(error, signal.aborted, options.timeoutMs);
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function stringField(value: unknown, key: string): string | null {
  const field = typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined;
  return typeof field === "string" && field.length > 0 ? field : null;
}

function headerOf(value: string | string[] | undefined): string | null {
  const first = Array.isArray(value) ? value[0] : value;
  return first && first.length > 0 ? first : null;
}
