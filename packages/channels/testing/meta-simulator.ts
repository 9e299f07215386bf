import { createHash, createHmac, randomBytes } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { MetaOptions } from "../src/adapter.js";

/**
 * A stand-in for Meta's Graph API on 127.0.0.1, speaking the wire format of the WhatsApp
 * Cloud API and the Messenger/Instagram Send API for what Parley uses: sends, media lookup
 * and media download. Tests only. Also builds webhook payloads exactly as Meta documents
 * them and posts them signed like Meta does.
 */

export interface RecordedRequest {
  method: string;
  /** Path and query, as received: `/v23.0/1234/messages`. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The JSON body parsed; the raw text when it is not JSON; null when empty. */
  body: unknown;
  /** When it began to arrive (`performance.now()`): the pace of a sender. */
  arrivedAt: number;
}

/** An answer to script: a status and body (a Graph error body, say), or no answer at all. */
export type ScriptedFailure = { status: number; body: unknown } | { hang: true };

export interface HostedMedia {
  id: string;
  /** Where the file downloads from (needs the Bearer token unless hosted `public`). */
  url: string;
}

export interface MetaSimulator {
  /** For `MetaOptions.graphBaseUrl`. */
  url: string;
  /** The only access token the simulator accepts. */
  accessToken: string;
  /** Every request received, in order. */
  requests: RecordedRequest[];
  /** Options pointing an adapter at the simulator. */
  options(overrides?: Partial<MetaOptions>): MetaOptions;
  /**
   * Hosts a file. `GET /{version}/{id}` describes it as WhatsApp does; its URL serves it,
   * to the Bearer token only unless `public` (a Messenger/Instagram CDN link).
   */
  addMedia(
    bytes: Buffer,
    contentType: string,
    options?: { public?: boolean; fileSize?: number; id?: string; chunked?: boolean },
  ): HostedMedia;
  /**
   * Makes `GET /{version}/{id}` describe a phone number, Page or Instagram account (to the
   * access token only), as the credential check of `pnpm admin connect-channel` reads it.
   */
  addAccount(id: string): void;
  /** The next `count` requests (those `where` accepts) get `failure` instead of an answer. */
  failNext(count: number, failure: ScriptedFailure, where?: (request: RecordedRequest) => boolean): void;
  /** Forgets recorded requests and scripted failures not yet used (hosted media stays). */
  reset(): void;
  close(): Promise<void>;
}

export const SIMULATOR_API_VERSION = "v23.0";

interface StoredMedia {
  bytes: Buffer;
  contentType: string;
  public: boolean;
  fileSize: number;
  /** Sent without `content-length`, so only reading the body tells its size. */
  chunked: boolean;
}

interface Script {
  remaining: number;
  failure: ScriptedFailure;
  where: (request: RecordedRequest) => boolean;
}

export async function startMetaSimulator(options: { accessToken?: string } = {}): Promise<MetaSimulator> {
  const accessToken = options.accessToken ?? `EAAG${randomBytes(24).toString("base64url")}`;
  const requests: RecordedRequest[] = [];
  const media = new Map<string, StoredMedia>();
  const accounts = new Set<string>();
  const scripts: Script[] = [];
  let baseUrl = "";

  const server = createServer((req, res) => {
    const arrivedAt = performance.now();
    readBody(req).then(
      (raw) => {
        const request: RecordedRequest = {
          method: req.method ?? "GET",
          path: req.url ?? "/",
          headers: req.headers,
          body: parseBody(raw),
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
        route(request, res, { accessToken, media, accounts, baseUrl: () => baseUrl });
      },
      () => res.destroy(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: baseUrl,
    accessToken,
    requests,
    options: (overrides = {}) => ({
      graphBaseUrl: baseUrl,
      apiVersion: SIMULATOR_API_VERSION,
      timeoutMs: 5_000,
      ...overrides,
    }),
    addMedia(bytes, contentType, hosting = {}) {
      const id = hosting.id ?? String(1_000_000_000_000_000n + BigInt(media.size + 1));
      media.set(id, {
        bytes,
        contentType,
        public: hosting.public ?? false,
        fileSize: hosting.fileSize ?? bytes.length,
        chunked: hosting.chunked ?? false,
      });
      return { id, url: mediaUrl(baseUrl, id) };
    },
    addAccount(id) {
      accounts.add(id);
    },
    failNext(count, failure, where = () => true) {
      scripts.push({ remaining: count, failure, where });
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

interface State {
  accessToken: string;
  media: Map<string, StoredMedia>;
  accounts: Set<string>;
  baseUrl: () => string;
}

function route(request: RecordedRequest, res: ServerResponse, state: State) {
  const url = new URL(request.path, "http://simulator");
  const download = /^\/media\/([^/]+)$/.exec(url.pathname);
  if (request.method === "GET" && download?.[1])
    return serveMedia(decodeURIComponent(download[1]), request, res, state);
  if (!authorized(request, state)) return sendJson(res, 401, INVALID_TOKEN);
  // `/{phone-number-id}/messages`, `/{page-id}/messages`, or `/me/messages` (a Page token's own Page).
  const send = /^\/v\d+\.\d+\/(\d+|me)\/messages$/.exec(url.pathname);
  if (request.method === "POST" && send?.[1]) return answerSend(request.body, res);
  const object = /^\/v\d+\.\d+\/([^/]+)$/.exec(url.pathname);
  const objectId = object?.[1] ? decodeURIComponent(object[1]) : undefined;
  if (request.method === "GET" && objectId && state.accounts.has(objectId)) return sendJson(res, 200, { id: objectId });
  if (request.method === "GET" && objectId) return describeMedia(objectId, res, state);
  sendJson(res, 400, metaError(2500, `Unknown path components: ${url.pathname}`, { type: "OAuthException" }).body);
}

function authorized(request: RecordedRequest, state: State): boolean {
  return request.headers.authorization === `Bearer ${state.accessToken}`;
}

/** WhatsApp answers with a wamid; Messenger and Instagram with the recipient and an `m_` mid. */
function answerSend(body: unknown, res: ServerResponse) {
  const payload = typeof body === "object" && body !== null ? (body as Record<string, unknown>) : {};
  if (payload.messaging_product === "whatsapp") {
    if (typeof payload.to !== "string" || typeof payload.type !== "string") {
      return sendJson(res, 400, INVALID_PARAMETER.body);
    }
    const waId = payload.to.replace(/\D/g, "");
    return sendJson(res, 200, {
      messaging_product: "whatsapp",
      contacts: [{ input: payload.to, wa_id: waId }],
      messages: [{ id: wamid(waId) }],
    });
  }
  const recipient = payload.recipient as { id?: unknown } | undefined;
  if (typeof recipient?.id !== "string" || typeof payload.message !== "object") {
    return sendJson(res, 400, INVALID_PARAMETER.body);
  }
  sendJson(res, 200, { recipient_id: recipient.id, message_id: `m_${randomBytes(45).toString("base64url")}` });
}

/** `GET /{version}/{media-id}`, as the Cloud API retrieves media URLs. */
function describeMedia(id: string, res: ServerResponse, state: State) {
  const stored = state.media.get(id);
  if (!stored) {
    const message = `Unsupported get request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`;
    return sendJson(res, 400, metaError(100, message, { subcode: 33 }).body);
  }
  sendJson(res, 200, {
    url: mediaUrl(state.baseUrl(), id),
    mime_type: stored.contentType,
    sha256: createHash("sha256").update(stored.bytes).digest("hex"),
    file_size: stored.fileSize,
    id,
    messaging_product: "whatsapp",
  });
}

function serveMedia(id: string, request: RecordedRequest, res: ServerResponse, state: State) {
  const stored = state.media.get(id);
  if (!stored) return sendJson(res, 404, metaError(100, "Media not found").body);
  if (!stored.public && !authorized(request, state)) return sendJson(res, 401, INVALID_TOKEN);
  if (!stored.chunked) {
    res.writeHead(200, { "content-type": stored.contentType, "content-length": stored.bytes.length });
    return res.end(stored.bytes);
  }
  res.writeHead(200, { "content-type": stored.contentType, "transfer-encoding": "chunked" });
  const half = Math.floor(stored.bytes.length / 2);
  res.write(stored.bytes.subarray(0, half));
  res.end(stored.bytes.subarray(half));
}

function mediaUrl(baseUrl: string, id: string): string {
  return `${baseUrl}/media/${encodeURIComponent(id)}`;
}

/** Like `wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI...`: base64 of the recipient and random bytes. */
function wamid(waId: string): string {
  return `wamid.${Buffer.concat([Buffer.from(`\x18\x0b${waId}\x15\x02\x00\x11\x18\x12`), randomBytes(18)]).toString("base64")}`;
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
  const type = typeof body === "string" ? "text/html; charset=utf-8" : "application/json";
  res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(text) });
  res.end(text);
}

// --- Meta's error bodies -----------------------------------------------------------------

/**
 * A Graph API error answer: `{"error":{"message","type","code","error_subcode",
 * "error_data":{"messaging_product","details"},"fbtrace_id"}}`.
 */
export function metaError(
  code: number,
  message: string,
  options: { status?: number; subcode?: number; details?: string; type?: string; transient?: boolean } = {},
): { status: number; body: unknown } {
  const error: Record<string, unknown> = { message, type: options.type ?? "OAuthException", code };
  if (options.subcode !== undefined) error.error_subcode = options.subcode;
  if (options.details !== undefined) error.error_data = { messaging_product: "whatsapp", details: options.details };
  if (options.transient !== undefined) error.is_transient = options.transient;
  error.fbtrace_id = `A${randomBytes(15).toString("base64url")}`;
  return { status: options.status ?? 400, body: { error } };
}

/** Real failures, as the Graph API answers them. */
export const metaErrors = {
  undeliverable: () => metaError(131026, "(#131026) Message Undeliverable.", { details: "Message Undeliverable." }),
  rateLimit: (status = 400) =>
    metaError(130429, "(#130429) Rate limit hit", {
      status,
      details: "Cloud API message throughput has been reached.",
    }),
  invalidParameter: () =>
    metaError(100, "(#100) Invalid parameter", { details: "Parameter value is not valid", subcode: 2494010 }),
  tokenExpired: () =>
    metaError(190, "Error validating access token: Session has expired on Tuesday, 01-Jul-25 10:00:00 PDT.", {
      status: 401,
      subcode: 463,
    }),
  outsideWindow: () =>
    metaError(
      10,
      "(#10) This message is sent outside of allowed window. Learn more about the new policy here: https://developers.facebook.com/docs/messenger-platform/policy-overview",
      { subcode: 2018278 },
    ),
  serviceUnavailable: () =>
    metaError(131016, "(#131016) Service unavailable", {
      status: 503,
      details: "A service is temporarily unavailable.",
    }),
  unexpected: () =>
    metaError(2, "An unexpected error has occurred. Please retry your request later.", {
      status: 500,
      transient: true,
    }),
  somethingWentWrong: (status = 400) =>
    metaError(131000, "(#131000) Something went wrong", { status, details: "Something went wrong." }),
};

const INVALID_TOKEN = metaError(190, "Invalid OAuth access token - Cannot parse access token").body;
const INVALID_PARAMETER = metaErrors.invalidParameter();

// --- Webhooks ---------------------------------------------------------------------------

/**
 * POSTs `payload` as Meta does: JSON with `X-Hub-Signature-256` over the exact bytes sent.
 * `signature` replaces the header's value (a string) or leaves the header out (null).
 */
export async function sendWebhook(
  url: string,
  payload: unknown,
  appSecret: string,
  options: { signature?: string | null } = {},
): Promise<{ status: number; body: string }> {
  const raw = typeof payload === "string" ? payload : JSON.stringify(payload);
  // Computed here with node:crypto, not with Parley's signer: a test must not grade itself.
  const computed = `sha256=${createHmac("sha256", appSecret).update(raw).digest("hex")}`;
  const signature = options.signature === undefined ? computed : options.signature;
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "user-agent": "facebookexternalua",
      ...(signature === null ? {} : { "x-hub-signature-256": signature }),
    },
    body: raw,
  });
  return { status: response.status, body: await response.text() };
}

const WABA_ID = "102290129340398";
const DISPLAY_PHONE_NUMBER = "15550783881";

function seconds(at: Date | undefined): string {
  return String(Math.floor((at ?? new Date()).getTime() / 1000));
}

function millis(at: Date | undefined): number {
  return (at ?? new Date()).getTime();
}

function whatsappPayload(phoneNumberId: string, value: Record<string, unknown>) {
  return {
    object: "whatsapp_business_account",
    entry: [
      {
        id: WABA_ID,
        changes: [
          {
            value: {
              messaging_product: "whatsapp",
              metadata: { display_phone_number: DISPLAY_PHONE_NUMBER, phone_number_id: phoneNumberId },
              ...value,
            },
            field: "messages",
          },
        ],
      },
    ],
  };
}

function newWamid(): string {
  return wamid(String(15550000000 + Math.floor(Math.random() * 9_999_999)));
}

interface WhatsappInbound {
  phoneNumberId: string;
  from: string;
  name?: string;
  id?: string;
  timestamp?: Date;
}

export function whatsappTextMessage(input: WhatsappInbound & { text: string }) {
  return whatsappInbound(input, { type: "text", text: { body: input.text } });
}

export function whatsappMediaMessage(
  input: WhatsappInbound & {
    kind: "image" | "video" | "audio" | "document" | "sticker";
    mediaId: string;
    mimeType: string;
    caption?: string;
    filename?: string;
  },
) {
  const media: Record<string, unknown> = {
    mime_type: input.mimeType,
    sha256: randomBytes(32).toString("base64"),
    id: input.mediaId,
  };
  // Audio and stickers have no caption; only documents a file name.
  if (input.caption !== undefined && input.kind !== "audio" && input.kind !== "sticker") media.caption = input.caption;
  if (input.filename !== undefined && input.kind === "document") media.filename = input.filename;
  if (input.kind === "audio") media.voice = input.mimeType.startsWith("audio/ogg");
  if (input.kind === "sticker") media.animated = false;
  return whatsappInbound(input, { type: input.kind, [input.kind]: media });
}

/** Any other message type, for the cases Parley does not show (location, reaction...). */
export function whatsappOtherMessage(input: WhatsappInbound & { type: string; content: unknown }) {
  return whatsappInbound(input, { type: input.type, [input.type]: input.content });
}

function whatsappInbound(input: WhatsappInbound, content: Record<string, unknown>) {
  return whatsappPayload(input.phoneNumberId, {
    contacts: [{ profile: { name: input.name ?? "Ada Lovelace" }, wa_id: input.from }],
    messages: [{ from: input.from, id: input.id ?? newWamid(), timestamp: seconds(input.timestamp), ...content }],
  });
}

export function whatsappStatus(input: {
  phoneNumberId: string;
  id: string;
  status: "sent" | "delivered" | "read" | "failed";
  recipientId: string;
  callbackData?: string;
  error?: { code: number; title: string; message?: string; details?: string };
  timestamp?: Date;
}) {
  const status: Record<string, unknown> = {
    id: input.id,
    status: input.status,
    timestamp: seconds(input.timestamp),
    recipient_id: input.recipientId,
  };
  if (input.callbackData !== undefined) status.biz_opaque_callback_data = input.callbackData;
  if (input.status === "sent" || input.status === "delivered") {
    status.conversation = {
      id: randomBytes(16).toString("hex"),
      origin: { type: "service" },
      ...(input.status === "sent" ? { expiration_timestamp: seconds(new Date(Date.now() + 86_400_000)) } : {}),
    };
    status.pricing = { billable: false, pricing_model: "PMP", category: "service" };
  }
  if (input.error) {
    status.errors = [
      {
        code: input.error.code,
        title: input.error.title,
        message: input.error.message ?? input.error.title,
        error_data: { details: input.error.details ?? input.error.title },
        href: "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/",
      },
    ];
  }
  return whatsappPayload(input.phoneNumberId, { statuses: [status] });
}

interface AttachmentInput {
  type: string;
  url?: string;
}

function attachmentsOf(attachments: AttachmentInput[]) {
  return attachments.map((attachment) => ({
    type: attachment.type,
    payload: attachment.url === undefined ? {} : { url: attachment.url },
  }));
}

function messagePart(input: { text?: string; mid?: string; attachments?: AttachmentInput[] }) {
  return {
    mid: input.mid ?? `m_${randomBytes(45).toString("base64url")}`,
    ...(input.text === undefined ? {} : { text: input.text }),
    ...(input.attachments ? { attachments: attachmentsOf(input.attachments) } : {}),
  };
}

function pagePayload(object: "page" | "instagram", ownerId: string, event: Record<string, unknown>, at?: Date) {
  return { object, entry: [{ id: ownerId, time: millis(at), messaging: [event] }] };
}

/** A message from the person; `echo` makes it the page's own send, as Meta echoes it. */
export function messengerTextMessage(input: {
  pageId: string;
  psid: string;
  text?: string;
  mid?: string;
  attachments?: AttachmentInput[];
  echo?: boolean;
  timestamp?: Date;
}) {
  const message = { ...messagePart(input), ...(input.echo ? { is_echo: true, app_id: 1517776481860111 } : {}) };
  const [sender, recipient] = input.echo ? [input.pageId, input.psid] : [input.psid, input.pageId];
  return pagePayload(
    "page",
    input.pageId,
    { sender: { id: sender }, recipient: { id: recipient }, timestamp: millis(input.timestamp), message },
    input.timestamp,
  );
}

/** `message_deliveries`: no timestamp of its own, the watermark says up to when. */
export function messengerDelivery(input: { pageId: string; psid: string; mids?: string[]; watermark: Date }) {
  return pagePayload("page", input.pageId, {
    sender: { id: input.psid },
    recipient: { id: input.pageId },
    delivery: { ...(input.mids ? { mids: input.mids } : {}), watermark: input.watermark.getTime() },
  });
}

export function messengerRead(input: { pageId: string; psid: string; watermark: Date; timestamp?: Date }) {
  return pagePayload("page", input.pageId, {
    sender: { id: input.psid },
    recipient: { id: input.pageId },
    timestamp: millis(input.timestamp),
    read: { watermark: input.watermark.getTime() },
  });
}

export function instagramMessage(input: {
  accountId: string;
  igsid: string;
  text?: string;
  mid?: string;
  attachments?: AttachmentInput[];
  timestamp?: Date;
}) {
  const mid = input.mid ?? `aWdfZAG1faXRlbToxOklHTWVzc2FnZAUlEOj${randomBytes(48).toString("base64url")}`;
  return pagePayload(
    "instagram",
    input.accountId,
    {
      sender: { id: input.igsid },
      recipient: { id: input.accountId },
      timestamp: millis(input.timestamp),
      message: messagePart({ ...input, mid }),
    },
    input.timestamp,
  );
}

/** `messaging_seen`: Instagram names the message that was seen. */
export function instagramRead(input: { accountId: string; igsid: string; mid: string; timestamp?: Date }) {
  return pagePayload("instagram", input.accountId, {
    sender: { id: input.igsid },
    recipient: { id: input.accountId },
    timestamp: millis(input.timestamp),
    read: { mid: input.mid },
  });
}
