import { createHash, createHmac, createPublicKey, type KeyObject, randomBytes, randomUUID, verify } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { exportPKCS8, exportSPKI, generateKeyPair } from "jose";
import type { VonageOptions } from "../src/sms/vonage/client.js";

/**
 * A stand-in for Vonage's Messages API on 127.0.0.1, for what Parley uses: `POST /v1/messages`
 * sending SMS, authenticated by an application JWT. Tests only. Also builds the SMS webhooks
 * (inbound message, message status) as Vonage documents them and signs them as Vonage does:
 * `Authorization: Bearer <JWT>`, HS256 with the signature secret, `payload_hash` the hex SHA-256
 * of the body. Both the JWT check and the webhook signing use node:crypto, not jose and not
 * Parley's code: a test must not grade itself.
 */

export interface RecordedVonageRequest {
  method: string;
  /** Path and query, as received: `/v1/messages`. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The JSON body parsed; the raw text when it is not JSON; null when empty. */
  body: unknown;
  /** The claims of the Bearer JWT when its RS256 signature verified with the application's public key. */
  claims: Record<string, unknown> | null;
  /** When it began to arrive (`performance.now()`): the pace of a sender. */
  arrivedAt: number;
}

/** An answer to script: a status and a body (a problem, say), or no answer at all. */
export type VonageScriptedFailure = { status: number; body: unknown } | { hang: true };

export interface VonageKeyPair {
  /** PKCS#8 PEM, what `private_key` takes. */
  privateKey: string;
  /** SPKI PEM, what Vonage keeps for the application. */
  publicKey: string;
}

/** Claims of a signed webhook that a test may change; a value of null leaves the claim out. */
export interface VonageTokenClaims {
  iat?: number | null;
  jti?: string | null;
  iss?: string | null;
  api_key?: string | null;
  application_id?: string | null;
  payload_hash?: string | null;
  exp?: number | null;
}

export interface VonageSimulator {
  /** For `VonageOptions.baseUrl`. */
  url: string;
  applicationId: string;
  /** The application's public key: the only one whose private key's JWTs are accepted. */
  publicKey: string;
  /** The private key, when the simulator generated the pair (no `publicKey` was given). */
  privateKey: string | null;
  /** The account's signature secret, which signs the webhooks built here. */
  signatureSecret: string;
  /** Every request received, in order. */
  requests: RecordedVonageRequest[];
  /** Options pointing a client or adapter at the simulator. */
  options(overrides?: Partial<VonageOptions>): VonageOptions;
  /** The next `count` requests (those `where` accepts) get `failure` instead of an answer. */
  failNext(count: number, failure: VonageScriptedFailure, where?: (request: RecordedVonageRequest) => boolean): void;
  /** `Authorization` for a webhook of exactly these bytes, signed with this account's secret. */
  signWebhook(rawBody: string | Buffer, claims?: VonageTokenClaims): string;
  /** POSTs a webhook as Vonage does, signed with this account's secret and application. */
  postWebhook(
    url: string,
    payload: unknown,
    options?: VonagePostWebhookOptions,
  ): Promise<{ status: number; body: string }>;
  /** Forgets recorded requests and scripted failures not yet used. */
  reset(): void;
  close(): Promise<void>;
}

export interface VonagePostWebhookOptions {
  /** Replaces the header's value (a string) or leaves the header out (null). */
  authorization?: string | null;
  /** Changes or removes claims of the signed token. */
  claims?: VonageTokenClaims;
  /** Signs with this secret instead of the account's. */
  signatureSecret?: string;
}

interface Script {
  remaining: number;
  failure: VonageScriptedFailure;
  where: (request: RecordedVonageRequest) => boolean;
}

/** An RSA key pair as the Vonage Dashboard makes one for an application (2048 bits). */
export async function generateVonageKeyPair(): Promise<VonageKeyPair> {
  const { privateKey, publicKey } = await generateKeyPair("RS256", { modulusLength: 2048, extractable: true });
  return { privateKey: await exportPKCS8(privateKey), publicKey: await exportSPKI(publicKey) };
}

export async function startVonageSimulator(
  options: { applicationId?: string; publicKey?: string; signatureSecret?: string } = {},
): Promise<VonageSimulator> {
  const applicationId = options.applicationId ?? randomUUID();
  const signatureSecret = options.signatureSecret ?? randomBytes(24).toString("base64url");
  const pair = options.publicKey === undefined ? await generateVonageKeyPair() : null;
  const publicKeyPem = options.publicKey ?? pair?.publicKey ?? "";
  const publicKey = createPublicKey(publicKeyPem);
  const requests: RecordedVonageRequest[] = [];
  const scripts: Script[] = [];

  const server = createServer((req, res) => {
    const arrivedAt = performance.now();
    readBody(req).then(
      (raw) => {
        const request: RecordedVonageRequest = {
          method: req.method ?? "GET",
          path: req.url ?? "/",
          headers: req.headers,
          body: parseBody(raw),
          claims: verifiedClaims(req.headers.authorization, publicKey),
          arrivedAt,
        };
        requests.push(request);
        const script = scripts.find((candidate) => candidate.remaining > 0 && candidate.where(request));
        if (script) {
          script.remaining--;
          // A hung request is left open; close() drops its connection.
          if (!("hang" in script.failure)) sendJson(res, script.failure.status, script.failure.body);
          return;
        }
        route(request, res, applicationId);
      },
      () => res.destroy(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const signWebhook = (rawBody: string | Buffer, claims: VonageTokenClaims = {}, secret = signatureSecret) =>
    `Bearer ${signVonageWebhook(rawBody, secret, { application_id: applicationId, ...claims })}`;

  return {
    url,
    applicationId,
    publicKey: publicKeyPem,
    privateKey: pair?.privateKey ?? null,
    signatureSecret,
    requests,
    options: (overrides = {}) => ({ baseUrl: url, timeoutMs: 5_000, ...overrides }),
    failNext(count, failure, where = () => true) {
      scripts.push({ remaining: count, failure, where });
    },
    signWebhook: (rawBody, claims) => signWebhook(rawBody, claims),
    async postWebhook(target, payload, post = {}) {
      const raw = typeof payload === "string" ? payload : JSON.stringify(payload);
      const authorization =
        post.authorization === undefined ? signWebhook(raw, post.claims, post.signatureSecret) : post.authorization;
      return sendVonageWebhook(target, raw, authorization);
    },
    reset() {
      requests.length = 0;
      scripts.length = 0;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

function route(request: RecordedVonageRequest, res: ServerResponse, applicationId: string) {
  const path = new URL(request.path, "http://simulator").pathname;
  if (request.method !== "POST" || path !== "/v1/messages") {
    return sendJson(res, 404, problem("https://developer.vonage.com/api-errors#not-found", "Not Found", path));
  }
  if (request.claims?.application_id !== applicationId) return sendJson(res, 401, vonageErrors.unauthorized().body);
  const invalid = invalidSms(request.body);
  if (invalid) return sendJson(res, 422, vonageErrors.invalidParams(invalid).body);
  sendJson(res, 202, { message_uuid: randomUUID() });
}

/** What is wrong with an SMS send, as the Messages API would say it; null when it is well-formed. */
function invalidSms(body: unknown): string | null {
  const sms = typeof body === "object" && body !== null ? (body as Record<string, unknown>) : {};
  if (sms.channel !== "sms" || sms.message_type !== "text") return "channel must be sms and message_type text";
  if (typeof sms.to !== "string" || !/^[1-9]\d{6,14}$/.test(sms.to)) {
    return "The `to` parameter is not a valid E.164 number (no leading + or 00)";
  }
  if (typeof sms.from !== "string" || sms.from.length === 0) return "The `from` parameter is missing";
  if (typeof sms.text !== "string" || sms.text.length < 1 || sms.text.length > 1000) {
    return "The `text` parameter must be 1 to 1000 characters";
  }
  if (sms.client_ref !== undefined && (typeof sms.client_ref !== "string" || sms.client_ref.length > 100)) {
    return "The `client_ref` parameter must be at most 100 characters";
  }
  return null;
}

/**
 * The claims of an application JWT whose RS256 signature the public key verifies and that is
 * current (`exp` ahead, at most 24 hours after `iat`, as Vonage allows) with a `jti`; null otherwise.
 */
function verifiedClaims(authorization: string | undefined, publicKey: KeyObject): Record<string, unknown> | null {
  const token = /^Bearer ([^.\s]+)\.([^.\s]+)\.([^.\s]+)$/.exec(authorization ?? "");
  if (!token?.[1] || !token[2] || !token[3]) return null;
  const header = jsonOf(Buffer.from(token[1], "base64url").toString("utf8"));
  if (header?.alg !== "RS256") return null;
  const signed = Buffer.from(`${token[1]}.${token[2]}`);
  if (!verify("RSA-SHA256", signed, publicKey, Buffer.from(token[3], "base64url"))) return null;
  const claims = jsonOf(Buffer.from(token[2], "base64url").toString("utf8"));
  const now = Date.now() / 1000;
  if (!claims || typeof claims.iat !== "number" || typeof claims.exp !== "number") return null;
  if (claims.exp <= now || claims.exp - claims.iat > 86_400 || typeof claims.jti !== "string") return null;
  return claims;
}

function jsonOf(text: string): Record<string, unknown> | null {
  const value = parseBody(text);
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function parseBody(raw: string): unknown {
  if (raw.length === 0) return null;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown) {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  const problemBody = status >= 400 && typeof body === "object";
  const type =
    typeof body === "string"
      ? "text/html; charset=utf-8"
      : problemBody
        ? "application/problem+json"
        : "application/json";
  res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(text) });
  res.end(text);
}

// --- Vonage's problems (RFC 7807) ----------------------------------------------------------

function problem(type: string, title: string, detail: string) {
  return { type, title, detail, instance: randomUUID() };
}

/** A problem answer with Vonage's Messages API code `code` (the fragment of its `type`). */
export function vonageProblem(status: number, code: string, title: string, detail: string) {
  return { status, body: problem(`https://developer.vonage.com/api-errors/messages#${code}`, title, detail) };
}

/** Real failures, as the Messages API answers them. */
export const vonageErrors = {
  unauthorized: () => ({
    status: 401,
    body: problem(
      "https://developer.vonage.com/api-errors#unauthorized",
      "Unauthorized",
      "You did not provide correct credentials.",
    ),
  }),
  throttled: () =>
    vonageProblem(
      429,
      "1000",
      "Throttled",
      "You have exceeded the submission capacity allowed on this account. Please wait and retry",
    ),
  invalidParams: (detail = "The value of one or more parameters is invalid.") =>
    vonageProblem(422, "1020", "Invalid params", detail),
  illegalSender: () =>
    vonageProblem(
      422,
      "1120",
      "Illegal Sender Address - rejected",
      "Due to local regulations, the SenderID you set in from in the request was not accepted.",
    ),
  numberBarred: () =>
    vonageProblem(
      422,
      "1050",
      "Number barred",
      "The number you are trying to submit to is blacklisted and may not receive messages.",
    ),
  internal: () =>
    vonageProblem(500, "1030", "Internal error", "There was an error processing your request in the Platform."),
};

// --- Webhooks -------------------------------------------------------------------------------

/**
 * A signed webhook's token as Vonage makes it: HS256 over `iat`, `jti`, `iss: "Vonage"`,
 * `payload_hash` (hex SHA-256 of the raw body), `api_key`, `application_id`. `claims` changes
 * any of them; null leaves one out.
 */
export function signVonageWebhook(
  rawBody: string | Buffer,
  signatureSecret: string,
  claims: VonageTokenClaims = {},
): string {
  const defaults: Record<string, unknown> = {
    iat: Math.floor(Date.now() / 1000),
    jti: randomUUID(),
    iss: "Vonage",
    payload_hash: createHash("sha256").update(rawBody).digest("hex"),
    api_key: "a1b2c3d4",
  };
  const payload: Record<string, unknown> = { ...defaults };
  for (const [name, value] of Object.entries(claims)) {
    if (value === null) delete payload[name];
    else if (value !== undefined) payload[name] = value;
  }
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const signingInput = `${encode({ alg: "HS256", typ: "JWT" })}.${encode(payload)}`;
  return `${signingInput}.${createHmac("sha256", signatureSecret).update(signingInput).digest("base64url")}`;
}

/** POSTs a webhook body as Vonage does (JSON, `Authorization` as given, none when null). */
export async function sendVonageWebhook(
  url: string,
  rawBody: string,
  authorization: string | null,
): Promise<{ status: number; body: string }> {
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(authorization === null ? {} : { authorization }),
    },
    body: rawBody,
  });
  return { status: response.status, body: await response.text() };
}

function isoOf(at: Date | undefined): string {
  return (at ?? new Date()).toISOString();
}

/** An inbound SMS, as the Messages API posts it to the application's inbound URL. */
export function vonageInboundSms(input: {
  /** The channel's number, Vonage digits. */
  to: string;
  /** The customer, Vonage digits. */
  from: string;
  text: string;
  messageUuid?: string;
  timestamp?: Date;
}) {
  return {
    channel: "sms",
    message_uuid: input.messageUuid ?? randomUUID(),
    to: input.to,
    from: input.from,
    timestamp: isoOf(input.timestamp),
    text: input.text,
    sms: { num_messages: "1", keyword: input.text.trim().split(/\s+/)[0]?.toUpperCase() ?? "" },
    usage: { currency: "EUR", price: "0.0057" },
    message_type: "text",
    context_status: "none",
    origin: { network_code: "23410" },
  };
}

/** A status callback of an SMS, as the Messages API posts it to the application's status URL. */
export function vonageSmsStatus(input: {
  messageUuid: string;
  status: "submitted" | "delivered" | "rejected" | "undeliverable" | "read" | (string & {});
  /** The recipient, Vonage digits. */
  to: string;
  /** The channel's sender. */
  from: string;
  clientRef?: string;
  error?: { code: string; title: string; detail?: string };
  timestamp?: Date;
}) {
  const status: Record<string, unknown> = {
    message_uuid: input.messageUuid,
    to: input.to,
    from: input.from,
    timestamp: isoOf(input.timestamp),
    status: input.status,
    channel: "sms",
  };
  if (input.clientRef !== undefined) status.client_ref = input.clientRef;
  if (input.status === "submitted") {
    status.usage = { currency: "EUR", price: "0.0333" };
    status.destination = { network_code: "23410" };
    status.sms = { count_total: "1" };
  }
  if (input.error) {
    status.error = {
      type: `https://developer.vonage.com/api-errors/messages#${input.error.code}`,
      title: input.error.title,
      detail: input.error.detail ?? input.error.title,
      instance: randomUUID(),
    };
  }
  return status;
}
