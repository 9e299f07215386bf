import { randomBytes, randomUUID } from "node:crypto";
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import type { TwilioOptions } from "../src/sms/twilio/client.js";
import { computeTwilioSignature } from "../src/sms/twilio/signature.js";

/**
 * A stand-in for Twilio's REST API (`api.twilio.com/2010-04-01`) on 127.0.0.1, speaking its
 * wire format for what Parley uses: sending a message (form-encoded, HTTP Basic), reading the
 * account, and incoming media behind "Enforce HTTP Auth on Media URLs" (the API host answers
 * with a redirect to a CDN, a second server here). Tests only. Also builds incoming-message
 * and status-callback webhooks as Twilio sends them, signed with `X-Twilio-Signature`.
 */

export interface TwilioRecordedRequest {
  method: string;
  /** Path and query, as received. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The form's fields in order, repeated names (`MediaUrl`) included. */
  fields: [string, string][];
  /** The same fields by name; a repeated name has all its values. */
  form: Record<string, string | string[]>;
  arrivedAt: number;
}

/** An answer to script: a status and body (Twilio's error JSON, say), or no answer at all. */
export type TwilioScriptedFailure = { status: number; body: unknown } | { hang: true };

export interface TwilioApiKey {
  sid: string;
  secret: string;
}

export interface HostedTwilioMedia {
  sid: string;
  /** `MediaUrl0` as Twilio gives it: on the API host, redirecting to the CDN. */
  url: string;
}

/** A webhook as Twilio would POST it: the URL it signs, its parameters, form body and signature. */
export interface TwilioCallback {
  url: string;
  params: Record<string, string>;
  body: string;
  signature: string;
}

export interface TwilioSimulator {
  url: string;
  cdnUrl: string;
  accountSid: string;
  authToken: string;
  /** Every request to the API host, in order. */
  requests: TwilioRecordedRequest[];
  /** Every request to the CDN, in order. */
  cdnRequests: TwilioRecordedRequest[];
  /** Options pointing a client or adapter at the simulator. */
  options(overrides?: Partial<TwilioOptions>): TwilioOptions;
  /** A (Standard) API key of the account the simulator accepts from now on. */
  addApiKey(): TwilioApiKey;
  /** Hosts an incoming message's file; its URL needs the account's credentials unless `public`. */
  addMedia(bytes: Buffer, contentType: string, hosting?: { public?: boolean; chunked?: boolean }): HostedTwilioMedia;
  /** The Account resource's `status` (`active` until set). */
  setAccountStatus(status: "active" | "suspended" | "closed"): void;
  /** The next `count` requests (those `where` accepts) get `failure` instead of an answer. */
  failNext(count: number, failure: TwilioScriptedFailure, where?: (request: TwilioRecordedRequest) => boolean): void;
  /** A status callback for `url`, as Twilio POSTs it to a message's `StatusCallback`. */
  statusCallback(url: string, input: StatusCallbackInput): TwilioCallback;
  /** An incoming message for `url`, as Twilio POSTs it to the number's messaging webhook. */
  inboundMessage(url: string, input: InboundMessageInput): TwilioCallback;
  /** POSTs a callback; `signature` replaces the header's value (a string) or leaves it out (null). */
  send(callback: TwilioCallback, options?: { signature?: string | null }): Promise<{ status: number; body: string }>;
  /** Forgets recorded requests and scripted failures not yet used (keys and media stay). */
  reset(): void;
  close(): Promise<void>;
}

export interface StatusCallbackInput {
  messageSid: string;
  status: "queued" | "sending" | "sent" | "delivered" | "undelivered" | "failed" | "read" | "canceled";
  to: string;
  from?: string;
  messagingServiceSid?: string;
  errorCode?: number;
}

export interface InboundMessageInput {
  from: string;
  to: string;
  body: string;
  media?: { url: string; contentType: string }[];
  messagingServiceSid?: string;
  optOutType?: "STOP" | "START" | "HELP";
  messageSid?: string;
}

const API_VERSION = "2010-04-01";

/** A Twilio SID: two letters, 32 hex digits. */
export function twilioSid(prefix: string): string {
  return `${prefix}${randomBytes(16).toString("hex")}`;
}

/** Twilio's error answer: `{"code","message","more_info","status"}`. */
export function twilioError(code: number, message: string, status = 400): { status: number; body: unknown } {
  return { status, body: { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status } };
}

/** Real refusals, as Twilio answers them. */
export const twilioErrors = {
  authenticate: () => twilioError(20003, "Authenticate", 401),
  tooManyRequests: () => twilioError(20429, "Too Many Requests", 429),
  internal: () => twilioError(20500, "An internal server error has occurred", 500),
  invalidTo: (to = "+1555") => twilioError(21211, `The 'To' number ${to} is not a valid phone number.`),
  unsubscribed: () => twilioError(21610, "Attempt to send to unsubscribed recipient"),
  queueFull: () => twilioError(21611, "This 'From' number has exceeded the maximum number of queued messages"),
};

interface Script {
  remaining: number;
  failure: TwilioScriptedFailure;
  where: (request: TwilioRecordedRequest) => boolean;
}

interface StoredMedia {
  messageSid: string;
  bytes: Buffer;
  contentType: string;
  public: boolean;
  chunked: boolean;
}

export async function startTwilioSimulator(
  setup: { accountSid?: string; authToken?: string } = {},
): Promise<TwilioSimulator> {
  const accountSid = setup.accountSid ?? twilioSid("AC");
  const authToken = setup.authToken ?? randomBytes(16).toString("hex");
  const keys = new Map<string, string>();
  const media = new Map<string, StoredMedia>();
  const requests: TwilioRecordedRequest[] = [];
  const cdnRequests: TwilioRecordedRequest[] = [];
  const scripts: Script[] = [];
  let accountStatus = "active";
  let cdnUrl = "";
  const account = `/${API_VERSION}/Accounts/${accountSid}`;

  const api = createServer((req, res) =>
    record(req, requests, res, (request) => {
      const script = scripts.find((candidate) => candidate.remaining > 0 && candidate.where(request));
      if (!script) return route(request, res);
      script.remaining--;
      // A hung request is left open; close() drops its connection.
      if (!("hang" in script.failure)) sendJson(res, script.failure.status, script.failure.body);
    }),
  );
  const cdn = createServer((req, res) => record(req, cdnRequests, res, (request) => serveCdn(request, res)));
  const url = await listen(api);
  cdnUrl = await listen(cdn);

  function route(request: TwilioRecordedRequest, res: ServerResponse) {
    const { pathname } = new URL(request.path, "http://twilio");
    const mediaPath = new RegExp(`^${account}/Messages/(MM[0-9a-f]{32})/Media/(ME[0-9a-f]{32})$`).exec(pathname);
    const stored = mediaPath?.[2] ? media.get(mediaPath[2]) : undefined;
    if (request.method === "GET" && stored && stored.messageSid === mediaPath?.[1]) {
      if (!stored.public && credentialOf(request) === null) return sendJson(res, 401, twilioErrors.authenticate().body);
      // Twilio answers with a short-lived CDN URL (valid 4 hours when HTTP auth is enforced).
      res.writeHead(307, { location: `${cdnUrl}/media/${mediaPath?.[2]}?Expires=${Date.now() + 14_400_000}` });
      return res.end();
    }
    const credential = credentialOf(request);
    if (credential === null) return sendJson(res, 401, twilioErrors.authenticate().body);
    if (request.method === "POST" && pathname === `${account}/Messages.json`) return createMessage(request, res);
    if (request.method === "GET" && pathname === `${account}/Messages.json`) {
      return sendJson(res, 200, { messages: [], page: 0, page_size: 1, uri: `${account}/Messages.json?PageSize=1` });
    }
    if (request.method === "GET" && pathname === `${account}.json`) {
      // Only the account's own credentials (or a Main key) may read the Account resource;
      // the keys here are Standard keys.
      if (credential !== "account") return sendJson(res, 401, twilioErrors.authenticate().body);
      return sendJson(res, 200, accountResource());
    }
    sendJson(res, 404, twilioError(20404, `The requested resource ${pathname} was not found`, 404).body);
  }

  /** `account`, `key`, or null (wrong, missing or malformed credentials). */
  function credentialOf(request: TwilioRecordedRequest): "account" | "key" | null {
    const header = request.headers.authorization ?? "";
    const encoded = /^Basic (.+)$/.exec(header)?.[1];
    if (!encoded) return null;
    const decoded = Buffer.from(encoded, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    const [username, password] = [decoded.slice(0, colon), decoded.slice(colon + 1)];
    if (colon > 0 && username === accountSid && password === authToken) return "account";
    if (colon > 0 && keys.has(username) && keys.get(username) === password) return "key";
    return null;
  }

  function createMessage(request: TwilioRecordedRequest, res: ServerResponse) {
    const { form } = request;
    const first = (name: string) => (Array.isArray(form[name]) ? form[name][0] : form[name]);
    const to = first("To");
    const from = first("From");
    const service = first("MessagingServiceSid");
    const body = first("Body") ?? "";
    const mediaUrls = ([] as string[]).concat(form.MediaUrl ?? []);
    if (!to) return sendJson(res, 400, twilioError(21604, "A 'To' phone number is required.").body);
    if (!/^\+[1-9]\d{6,14}$/.test(to)) return sendJson(res, 400, twilioErrors.invalidTo(to).body);
    if (!from && !service) return sendJson(res, 400, twilioError(21603, "A 'From' phone number is required.").body);
    if (!body && mediaUrls.length === 0)
      return sendJson(res, 400, twilioError(21602, "Message body is required.").body);
    const sid = twilioSid(mediaUrls.length > 0 ? "MM" : "SM");
    const now = new Date().toUTCString().replace("GMT", "+0000");
    sendJson(res, 201, {
      account_sid: accountSid,
      api_version: API_VERSION,
      body,
      date_created: now,
      date_sent: null,
      date_updated: now,
      direction: "outbound-api",
      error_code: null,
      error_message: null,
      from: from ?? null,
      messaging_service_sid: service ?? null,
      num_media: String(mediaUrls.length),
      num_segments: service ? "0" : "1",
      price: null,
      price_unit: "USD",
      sid,
      // A Messaging Service accepts first and picks a sender; a number queues.
      status: service ? "accepted" : "queued",
      subresource_uris: { media: `${account}/Messages/${sid}/Media.json` },
      to,
      uri: `${account}/Messages/${sid}.json`,
    });
  }

  function accountResource() {
    const now = new Date().toUTCString().replace("GMT", "+0000");
    return {
      auth_token: authToken,
      date_created: now,
      date_updated: now,
      friendly_name: "Parley test account",
      owner_account_sid: accountSid,
      sid: accountSid,
      status: accountStatus,
      subresource_uris: { messages: `${account}/Messages.json` },
      type: "Full",
      uri: `${account}.json`,
    };
  }

  function serveCdn(request: TwilioRecordedRequest, res: ServerResponse) {
    const id = /^\/media\/(ME[0-9a-f]{32})$/.exec(new URL(request.path, "http://cdn").pathname)?.[1];
    const stored = id ? media.get(id) : undefined;
    if (!stored) return sendJson(res, 404, { message: "Not found" });
    if (!stored.chunked) {
      res.writeHead(200, { "content-type": stored.contentType, "content-length": stored.bytes.length });
      return res.end(stored.bytes);
    }
    res.writeHead(200, { "content-type": stored.contentType, "transfer-encoding": "chunked" });
    const half = Math.floor(stored.bytes.length / 2);
    res.write(stored.bytes.subarray(0, half));
    res.end(stored.bytes.subarray(half));
  }

  function callback(target: string, params: Record<string, string>): TwilioCallback {
    return {
      url: target,
      params,
      body: new URLSearchParams(params).toString(),
      signature: computeTwilioSignature(authToken, target, params),
    };
  }

  return {
    url,
    cdnUrl,
    accountSid,
    authToken,
    requests,
    cdnRequests,
    options: (overrides = {}) => ({ baseUrl: url, timeoutMs: 5_000, ...overrides }),
    addApiKey() {
      const key = { sid: twilioSid("SK"), secret: randomBytes(16).toString("hex") };
      keys.set(key.sid, key.secret);
      return key;
    },
    addMedia(bytes, contentType, hosting = {}) {
      const messageSid = twilioSid("MM");
      const sid = twilioSid("ME");
      media.set(sid, {
        messageSid,
        bytes,
        contentType,
        public: hosting.public ?? false,
        chunked: hosting.chunked ?? false,
      });
      return { sid, url: `${url}${account}/Messages/${messageSid}/Media/${sid}` };
    },
    setAccountStatus(status) {
      accountStatus = status;
    },
    failNext(count, failure, where = () => true) {
      scripts.push({ remaining: count, failure, where });
    },
    statusCallback(target, input) {
      const params: Record<string, string> = {
        SmsSid: input.messageSid,
        SmsStatus: input.status,
        MessageStatus: input.status,
        To: input.to,
        MessageSid: input.messageSid,
        AccountSid: accountSid,
        From: input.from ?? "+14155550100",
        ApiVersion: API_VERSION,
      };
      if (input.messagingServiceSid) params.MessagingServiceSid = input.messagingServiceSid;
      if (input.errorCode !== undefined) params.ErrorCode = String(input.errorCode);
      if (input.status === "delivered") params.RawDlrDoneDate = dlrDate(new Date());
      return callback(target, params);
    },
    inboundMessage(target, input) {
      const messageSid = input.messageSid ?? twilioSid(input.media?.length ? "MM" : "SM");
      const params: Record<string, string> = {
        ToCountry: "US",
        ToState: "CA",
        SmsMessageSid: messageSid,
        NumMedia: String(input.media?.length ?? 0),
        ToCity: "SAN FRANCISCO",
        FromZip: "94105",
        SmsSid: messageSid,
        FromState: "CA",
        SmsStatus: "received",
        FromCity: "SAN FRANCISCO",
        Body: input.body,
        FromCountry: "US",
        To: input.to,
        ToZip: "94105",
        NumSegments: "1",
        MessageSid: messageSid,
        AccountSid: accountSid,
        From: input.from,
        ApiVersion: API_VERSION,
      };
      if (input.messagingServiceSid) params.MessagingServiceSid = input.messagingServiceSid;
      if (input.optOutType) params.OptOutType = input.optOutType;
      for (const [index, file] of (input.media ?? []).entries()) {
        params[`MediaContentType${index}`] = file.contentType;
        params[`MediaUrl${index}`] = file.url;
      }
      return callback(target, params);
    },
    async send(sent, options = {}) {
      const signature = options.signature === undefined ? sent.signature : options.signature;
      const response = await fetch(sent.url, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          "user-agent": "TwilioProxy/1.1",
          "i-twilio-idempotency-token": randomUUID(),
          ...(signature === null ? {} : { "x-twilio-signature": signature }),
        },
        body: sent.body,
      });
      return { status: response.status, body: await response.text() };
    },
    reset() {
      requests.length = 0;
      cdnRequests.length = 0;
      scripts.length = 0;
    },
    close: async () => {
      await Promise.all([stop(api), stop(cdn)]);
    },
  };
}

/** `RawDlrDoneDate`: the carrier's delivery time as YYMMDDhhmm. */
function dlrDate(at: Date): string {
  const two = (value: number) => String(value).padStart(2, "0");
  return `${two(at.getUTCFullYear() % 100)}${two(at.getUTCMonth() + 1)}${two(at.getUTCDate())}${two(at.getUTCHours())}${two(at.getUTCMinutes())}`;
}

function record(
  req: IncomingMessage,
  into: TwilioRecordedRequest[],
  res: ServerResponse,
  answer: (request: TwilioRecordedRequest) => void,
) {
  const arrivedAt = performance.now();
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("error", () => res.destroy());
  req.on("end", () => {
    const raw = Buffer.concat(chunks).toString("utf8");
    const fields = [...new URLSearchParams(raw).entries()];
    const form: Record<string, string | string[]> = {};
    for (const [name, value] of fields) {
      const existing = form[name];
      form[name] = existing === undefined ? value : ([] as string[]).concat(existing, value);
    }
    const request = {
      method: req.method ?? "GET",
      path: req.url ?? "/",
      headers: req.headers,
      fields,
      form,
      arrivedAt,
    };
    into.push(request);
    answer(request);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown) {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  const type = typeof body === "string" ? "text/html; charset=utf-8" : "application/json; charset=utf-8";
  res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(text) });
  res.end(text);
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function stop(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((error) => (error ? reject(error) : resolve()));
    server.closeAllConnections();
  });
}
