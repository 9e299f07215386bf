import { z } from "zod";
import type { ErrorCode } from "./errors.js";
import {
  webchatLauncher,
  webchatMessage,
  webchatMessageBody,
  webchatReceiptBody,
  webchatSession,
  webchatSessionCreateBody,
} from "./resources/webchat.js";

/**
 * The routes that take no API key: the web chat visitor API (a visitor token), its page, and
 * the providers' webhooks (Meta's, Twilio's and Vonage's signatures). They are not catalogue operations (no scope, no SDK
 * method) but the OpenAPI document describes them too, with their own tags and security
 * schemes, so that it covers every public route. Paths are relative to `/v1` unless
 * `outsideV1`.
 */
export interface PublicRoute {
  id: string;
  method: "get" | "post" | "delete";
  path: string;
  tag: "Web chat visitors" | "Provider webhooks";
  summary: string;
  description: string;
  security: "visitorToken" | "metaSignature" | "twilioSignature" | "vonageSignature" | "none";
  outsideV1?: boolean;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  bodyName?: string;
  /** JSON response (or a non-JSON content type with a description). */
  response?: { status: 200 | 201 | 204; schema?: z.ZodType; name?: string; contentType?: string; description: string };
  errors: readonly ErrorCode[];
}

const channelParams = z.object({ channel_id: z.string() });

export const publicRoutes: PublicRoute[] = [
  {
    id: "webchat.widget",
    method: "get",
    path: "/webchat/widget.js",
    outsideV1: true,
    tag: "Web chat visitors",
    summary: "The web chat launcher script",
    description:
      'The one-line embed: `<script src=".../webchat/widget.js" data-channel="chn_..." async></script>` adds a chat bubble that opens the page below in an iframe and keeps the visitor\'s token in the site\'s own storage (docs/guides/webchat.md). The same bytes for everyone: cacheable (`ETag`, 304 on `If-None-Match`), gzipped when accepted, `Cross-Origin-Resource-Policy: cross-origin`, CORS `*`.',
    security: "none",
    response: { status: 200, contentType: "text/javascript", description: "The launcher script" },
    errors: [],
  },
  {
    id: "webchat.page",
    method: "get",
    path: "/webchat/{channel_id}",
    outsideV1: true,
    tag: "Web chat visitors",
    summary: "The web chat page",
    description:
      "The widget page a business embeds (an iframe, or through widget.js). Served under a nonce-only Content-Security-Policy.",
    security: "none",
    params: channelParams,
    response: { status: 200, contentType: "text/html", description: "The page" },
    errors: ["route_not_found"],
  },
  {
    id: "webchat.launcher",
    method: "get",
    path: "/webchat/channels/{channel_id}/launcher",
    tag: "Web chat visitors",
    summary: "The launcher's look",
    description:
      "The bubble's colour and corner from the channel's settings (`color`, `position`), which widget.js reads before it draws the bubble when the page gives no `data-color` / `data-position`. Public and cacheable for 5 minutes.",
    security: "none",
    params: channelParams,
    response: { status: 200, schema: webchatLauncher, name: "WebchatLauncher", description: "The launcher's look" },
    errors: ["resource_not_found", "invalid_state"],
  },
  {
    id: "webchat.sessions.create",
    method: "post",
    path: "/webchat/channels/{channel_id}/sessions",
    tag: "Web chat visitors",
    summary: "Start a visitor session",
    description:
      "Returns the visitor's token (`wct_...`), shown once. Limited per source address and per channel (429 `rate_limited`).",
    security: "none",
    params: channelParams,
    body: webchatSessionCreateBody,
    bodyName: "WebchatSessionCreate",
    response: { status: 201, schema: webchatSession, name: "WebchatSession", description: "The session and its token" },
    errors: ["invalid_json", "validation_error", "resource_not_found", "invalid_state", "rate_limited"],
  },
  {
    id: "webchat.session.delete",
    method: "delete",
    path: "/webchat/session",
    tag: "Web chat visitors",
    summary: "End the session",
    description: "The token stops working at once and the session's event streams close.",
    security: "visitorToken",
    response: { status: 204, description: "Ended" },
    errors: ["authentication_required", "invalid_api_key"],
  },
  {
    id: "webchat.session.messages.list",
    method: "get",
    path: "/webchat/session/messages",
    tag: "Web chat visitors",
    summary: "The visitor's conversation",
    description: "The messages of the visitor's own conversation, oldest first, in the visitor's shape.",
    security: "visitorToken",
    response: {
      status: 200,
      schema: z.object({ data: z.array(webchatMessage) }),
      name: "WebchatMessageList",
      description: "The messages",
    },
    errors: ["authentication_required", "invalid_api_key"],
  },
  {
    id: "webchat.session.messages.create",
    method: "post",
    path: "/webchat/session/messages",
    tag: "Web chat visitors",
    summary: "Send a visitor message",
    description: "Creates the contact and conversation with the first message. Limited per address and per channel.",
    security: "visitorToken",
    body: webchatMessageBody,
    bodyName: "WebchatMessageCreate",
    response: { status: 201, schema: webchatMessage, name: "WebchatMessage", description: "The message" },
    errors: [
      "authentication_required",
      "invalid_api_key",
      "invalid_json",
      "validation_error",
      "invalid_state",
      "rate_limited",
    ],
  },
  {
    id: "webchat.session.receipts.create",
    method: "post",
    path: "/webchat/session/receipts",
    tag: "Web chat visitors",
    summary: "Report a reply delivered or read",
    description: "The widget's receipts for the business's replies.",
    security: "visitorToken",
    body: webchatReceiptBody,
    bodyName: "WebchatReceipt",
    response: { status: 204, description: "Recorded" },
    errors: ["authentication_required", "invalid_api_key", "invalid_json", "validation_error", "resource_not_found"],
  },
  {
    id: "webchat.session.events",
    method: "get",
    path: "/webchat/session/events",
    tag: "Web chat visitors",
    summary: "Stream the replies",
    description:
      "Server-sent events of the business's replies and their statuses. The token may come as `?token=` here only (EventSource sends no header). At most 2 streams per session.",
    security: "visitorToken",
    query: z.object({ token: z.string().optional().describe("The visitor token, for EventSource") }),
    response: { status: 200, contentType: "text/event-stream", description: "The stream" },
    errors: ["authentication_required", "invalid_api_key", "rate_limited"],
  },
  {
    id: "providerWebhooks.meta.verify",
    method: "get",
    path: "/channels/webhooks/meta",
    tag: "Provider webhooks",
    summary: "Meta's subscription handshake",
    description: "Answers `hub.challenge` when `hub.verify_token` is a connected channel's verify token.",
    security: "none",
    query: z.object({
      "hub.mode": z.literal("subscribe"),
      "hub.verify_token": z.string(),
      "hub.challenge": z.string(),
    }),
    response: { status: 200, contentType: "text/plain", description: "The challenge, echoed" },
    errors: ["invalid_verify_token", "rate_limited"],
  },
  {
    id: "providerWebhooks.meta.receive",
    method: "post",
    path: "/channels/webhooks/meta",
    tag: "Provider webhooks",
    summary: "Meta's deliveries (WhatsApp, Messenger, Instagram)",
    description:
      "Meta's own webhook payloads, signed with the app secret of the channels they name (`X-Hub-Signature-256`). Rate-limited per source address; 1 MB at most.",
    security: "metaSignature",
    body: z.record(z.string(), z.unknown()),
    bodyName: "MetaWebhookPayload",
    response: { status: 200, contentType: "text/plain", description: "`EVENT_RECEIVED`" },
    errors: ["invalid_signature", "invalid_json", "payload_too_large", "rate_limited"],
  },
  {
    id: "providerWebhooks.twilio.receive",
    method: "post",
    path: "/channels/webhooks/twilio",
    tag: "Provider webhooks",
    summary: "Twilio's incoming messages and status callbacks (SMS)",
    description:
      "Twilio's own form-encoded webhooks: a number's (or Messaging Service's) incoming messages, and the status callbacks of the messages Parley sent (their `StatusCallback`). Signed with `X-Twilio-Signature` (the URL Twilio requested, `PUBLIC_BASE_URL` with this path and query, then the parameters sorted by name; HMAC-SHA1 keyed with the Auth Token of the channel the `MessagingServiceSid`, `To` or `From` names); a missing or wrong signature is 403 and nothing is stored. A number no channel has is answered 200 and ignored. Rate-limited per source address; 64 KiB at most.",
    security: "twilioSignature",
    response: { status: 200, contentType: "text/xml", description: "An empty TwiML `<Response/>`: no reply is sent" },
    errors: ["invalid_provider_signature", "payload_too_large", "rate_limited"],
  },
  vonageWebhookRoute("inbound", {
    summary: "Vonage's inbound messages (SMS)",
    what: "inbound message webhook, posted to the application's Inbound URL; the `to` number names the channel",
    bodyName: "VonageInboundMessage",
  }),
  vonageWebhookRoute("status", {
    summary: "Vonage's message status callbacks (SMS)",
    what: "message status webhook, posted to the application's Status URL; the `from` number names the channel",
    bodyName: "VonageMessageStatus",
  }),
];

/** One of the Vonage Messages API's two SMS webhooks: the same checks, answers and limits. */
function vonageWebhookRoute(
  kind: "inbound" | "status",
  route: { summary: string; what: string; bodyName: string },
): PublicRoute {
  return {
    id: `providerWebhooks.vonage.${kind}`,
    method: "post",
    path: `/channels/webhooks/vonage/${kind}`,
    tag: "Provider webhooks",
    summary: route.summary,
    description: `The Vonage Messages API's ${route.what}. Signed with a JWT in \`Authorization: Bearer\` (HS256 with the channel's signature secret, \`payload_hash\` the SHA-256 of the raw body); a bad token is 403 and nothing is stored; a webhook without \`Authorization\` is 503, so that Vonage retries it signed. A number no channel has is answered 200 and ignored. Rate-limited per source address; 64 KiB at most.`,
    security: "vonageSignature",
    body: z.record(z.string(), z.unknown()),
    bodyName: route.bodyName,
    response: { status: 200, contentType: "text/plain", description: "`OK`" },
    errors: ["invalid_provider_signature", "invalid_json", "payload_too_large", "rate_limited"],
  };
}
