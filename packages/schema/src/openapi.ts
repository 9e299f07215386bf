import { z } from "zod";
import { operations } from "./catalogue.js";
import { type ErrorCode, errorBody, errorCatalogue } from "./errors.js";
import type { Operation } from "./operation.js";
import { type PublicRoute, publicRoutes } from "./public-routes.js";
import { webhookEvents } from "./resources/event.js";
import { errorsOf, publicRouteErrorsOf } from "./route-errors.js";
import { scopes } from "./scopes.js";

export const API_VERSION = "1.0.0";

type JsonSchema = Record<string, unknown>;

const componentRef = (name: string) => ({ $ref: `#/components/schemas/${name}` });

const responseHeaders = {
  "X-Parley-Request-Id": { description: "Identifies this request; quote it to support.", schema: { type: "string" } },
  "X-RateLimit-Limit": { description: "Requests allowed per window.", schema: { type: "integer" } },
  "X-RateLimit-Remaining": { description: "Requests left in the current window.", schema: { type: "integer" } },
  "X-RateLimit-Reset": { description: "Unix seconds when the window resets.", schema: { type: "integer" } },
};

/** Renders the catalogue as an OpenAPI 3.1 document. */
export function buildOpenApiDocument(options: { serverUrl?: string } = {}): JsonSchema {
  const schemas = {
    ...componentSchemas("output", responseComponents()),
    ...componentSchemas("input", requestComponents()),
  };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const operation of operations) {
    paths[operation.path] ??= {};
    const pathItem = paths[operation.path] as Record<string, unknown>;
    pathItem[operation.method] = renderOperation(operation);
  }
  const serverUrl = options.serverUrl ?? "http://localhost:3000/v1";
  for (const route of publicRoutes) {
    paths[route.path] ??= route.outsideV1 ? { servers: [{ url: serverUrl.replace(/\/v1\/?$/, "") }] } : {};
    const pathItem = paths[route.path] as Record<string, unknown>;
    pathItem[route.method] = renderPublicRoute(route);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Parley API",
      version: API_VERSION,
      description:
        "One API for customer conversations on WhatsApp, Instagram, Messenger, email and web chat. " +
        "Authenticate with `Authorization: Bearer parley_live_...` or `parley_test_...`.",
    },
    servers: [{ url: serverUrl }],
    security: [{ apiKey: [] }],
    tags: [...new Set([...operations, ...publicRoutes].map((operation) => operation.tag))].map((name) => ({ name })),
    paths,
    webhooks: renderWebhooks(),
    components: {
      securitySchemes: {
        apiKey: {
          type: "http",
          scheme: "bearer",
          description: `API key. Scopes: ${scopes.map((scope) => `\`${scope}\``).join(", ")}.`,
        },
        visitorToken: {
          type: "http",
          scheme: "bearer",
          description: "A web chat visitor's token (`wct_...`), from `POST /webchat/channels/{channel_id}/sessions`.",
        },
        metaSignature: {
          type: "apiKey",
          in: "header",
          name: "X-Hub-Signature-256",
          description:
            "`sha256=<hex HMAC-SHA-256 of the raw body>` keyed with the Meta app secret of a connected channel.",
        },
        twilioSignature: {
          type: "apiKey",
          in: "header",
          name: "X-Twilio-Signature",
          description:
            "Base64 HMAC-SHA1 of the URL Twilio requested followed by each POST parameter's name and value sorted by name, keyed with the Auth Token of the channel the webhook names.",
        },
        vonageSignature: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "JWT",
          description:
            "Vonage's signed webhook token: a JWT, HS256 keyed with the signature secret of the channel the webhook's number names, `iss` `Vonage`, `iat` at most 5 minutes old, `payload_hash` the hex SHA-256 of the raw body, and `application_id`, when present, the channel's.",
        },
      },
      schemas,
    },
  };
}

/** `message.received` -> `MessageReceivedWebhook`: the component of that event's delivery body. */
export function webhookComponentName(type: string): string {
  const words = type.split(/[._]/).map((word) => word.charAt(0).toUpperCase() + word.slice(1));
  return `${words.join("")}Webhook`;
}

const webhookHeaders = [
  {
    name: "X-Parley-Signature",
    description:
      "`t=<unix seconds>,v1=<hex HMAC-SHA-256 of '<t>.<raw body>' keyed with the endpoint's whsec_ secret>`; several `v1` during a secret rotation. Verify it with @parley/webhook-verify.",
  },
  { name: "X-Parley-Event", description: "The event's type, as in the body." },
  {
    name: "X-Parley-Delivery",
    description: "This attempt's id (`whd_...`); deduplicate on the body's `id`, not this.",
  },
  { name: "X-Parley-Timestamp", description: "The signature's `t`." },
];

/** OpenAPI 3.1 `webhooks`: what Parley POSTs to an endpoint, one entry per event type. */
function renderWebhooks(): Record<string, unknown> {
  const webhooks: Record<string, unknown> = {};
  for (const type of Object.keys(webhookEvents)) {
    webhooks[type] = {
      post: {
        operationId: `webhook.${type}`,
        summary: `The ${type} event`,
        description:
          "Sent to every enabled endpoint subscribed to this type (or `*`) of the event's environment. `data` has the same schema as the GET of that resource. At least once: deduplicate on `id`.",
        tags: ["Webhooks"],
        security: [],
        parameters: webhookHeaders.map((header) => ({
          ...header,
          in: "header",
          required: true,
          schema: { type: "string" },
        })),
        requestBody: {
          required: true,
          content: { "application/json": { schema: componentRef(webhookComponentName(type)) } },
        },
        responses: {
          "2XX": {
            description:
              "Acknowledged: any 2xx within 10 s. Anything else, a redirect or no answer is retried on the schedule of decisions.md.",
          },
        },
      },
    };
  }
  return webhooks;
}

/** A route without an API key (public-routes.ts), in the same form as the catalogue's. */
function renderPublicRoute(route: PublicRoute): JsonSchema {
  const parameters = [...objectParameters(route.params, "path"), ...objectParameters(route.query, "query")];
  const success = route.response;
  const content =
    success?.schema && success.name
      ? { "application/json": { schema: componentRef(success.name) } }
      : success?.contentType
        ? { [success.contentType]: { schema: { type: "string" } } }
        : undefined;
  const responses: Record<string, unknown> = {
    [String(success?.status ?? 200)]: {
      description: success?.description ?? route.summary,
      headers: responseHeaders,
      ...(content ? { content } : {}),
    },
    ...errorResponses(publicRouteErrorsOf(route)),
  };
  return {
    operationId: route.id,
    summary: route.summary,
    description: route.description,
    tags: [route.tag],
    security: route.security === "none" ? [] : [{ [route.security]: [] }],
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(route.body && route.bodyName
      ? { requestBody: { required: true, content: { "application/json": { schema: componentRef(route.bodyName) } } } }
      : {}),
    responses,
  };
}

function responseComponents(): Map<string, z.ZodType> {
  const components = new Map<string, z.ZodType>([["Error", errorBody]]);
  for (const route of publicRoutes) {
    if (route.response?.schema && route.response.name) components.set(route.response.name, route.response.schema);
  }
  for (const [type, schema] of Object.entries(webhookEvents)) components.set(webhookComponentName(type), schema);
  for (const operation of operations) {
    if (!operation.responseContentType) components.set(operation.responseName, operation.response);
  }
  return components;
}

function requestComponents(): Map<string, z.ZodType> {
  const components = new Map<string, z.ZodType>();
  for (const route of publicRoutes) if (route.body && route.bodyName) components.set(route.bodyName, route.body);
  for (const operation of operations) {
    if (operation.body && operation.bodyName) components.set(operation.bodyName, operation.body);
  }
  return components;
}

function componentSchemas(io: "input" | "output", components: Map<string, z.ZodType>): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const [name, schema] of components) registry.add(schema, { id: name });
  const rendered = z.toJSONSchema(registry, {
    io,
    target: "draft-2020-12",
    unrepresentable: "any",
    uri: (id) => `#/components/schemas/${id}`,
  });
  const result: Record<string, JsonSchema> = {};
  for (const [name, schema] of Object.entries(rendered.schemas)) result[name] = withoutDialect(schema as JsonSchema);
  return result;
}

function renderOperation(operation: Operation): JsonSchema {
  const parameters = [
    ...objectParameters(operation.params, "path"),
    ...objectParameters(operation.query, "query"),
    ...(operation.idempotent
      ? [
          {
            name: "Idempotency-Key",
            in: "header",
            required: false,
            description: "Makes a retry safe: the same key and body replay the stored response for 24 hours.",
            schema: { type: "string", maxLength: 255 },
          },
        ]
      : []),
  ];
  const description = [
    operation.description,
    operation.scope ? `Scope: \`${operation.scope}\`.` : "Any valid key.",
    operation.testOnly ? "Test keys only; a live key gets 404 `route_not_found`." : undefined,
  ]
    .filter(Boolean)
    .join("\n\n");
  return {
    operationId: operation.id,
    summary: operation.summary,
    description,
    tags: [operation.tag],
    "x-parley-scope": operation.scope ?? "none",
    ...(parameters.length > 0 ? { parameters } : {}),
    ...requestBodyOf(operation),
    responses: renderResponses(operation),
  };
}

function requestBodyOf(operation: Operation): JsonSchema {
  if (operation.requestContentType === "multipart/form-data") {
    return {
      requestBody: {
        required: true,
        content: {
          "multipart/form-data": {
            schema: {
              type: "object",
              required: ["file"],
              properties: { file: { type: "string", contentMediaType: "application/octet-stream" } },
            },
          },
        },
      },
    };
  }
  if (operation.requestContentType === "message/rfc822") {
    return {
      requestBody: {
        required: true,
        content: { "message/rfc822": { schema: { type: "string", contentMediaType: "message/rfc822" } } },
      },
    };
  }
  if (!operation.body || !operation.bodyName) return {};
  return {
    requestBody: { required: true, content: { "application/json": { schema: componentRef(operation.bodyName) } } },
  };
}

function successContent(operation: Operation): JsonSchema {
  if (operation.responseContentType) {
    return { "*/*": { schema: { type: "string", contentMediaType: "application/octet-stream" } } };
  }
  return { "application/json": { schema: componentRef(operation.responseName) } };
}

function renderResponses(operation: Operation): Record<string, unknown> {
  const success = {
    description: operation.summary,
    headers: responseHeaders,
    content: successContent(operation),
  };
  const responses: Record<string, unknown> = { [String(operation.status)]: success };
  if (operation.findOrCreate) responses["200"] = { ...success, description: "The existing resource (find-or-create)" };
  return { ...responses, ...errorResponses(errorsOf(operation)) };
}

/** The error answers of `codes`, one per status, each naming its codes. */
function errorResponses(codes: readonly ErrorCode[]): Record<string, unknown> {
  const responses: Record<string, unknown> = {};
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = errorCatalogue[code].status;
    const sameStatus = byStatus.get(status) ?? [];
    if (!sameStatus.includes(code)) sameStatus.push(code);
    byStatus.set(status, sameStatus);
  }
  for (const [status, sameStatus] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(status)] = {
      description: sameStatus.map((code) => `\`${code}\`: ${errorCatalogue[code].description}`).join(" "),
      headers:
        status === 429 ? { ...responseHeaders, "Retry-After": { schema: { type: "integer" } } } : responseHeaders,
      content: { "application/json": { schema: componentRef("Error") } },
    };
  }
  return responses;
}

function objectParameters(schema: z.ZodObject | undefined, location: "path" | "query"): JsonSchema[] {
  if (!schema) return [];
  return Object.entries(schema.shape).map(([name, field]) => {
    const rendered = withoutDialect(z.toJSONSchema(field as z.ZodType, { io: "input", unrepresentable: "any" }));
    const { description, ...fieldSchema } = rendered;
    return {
      name,
      in: location,
      required: location === "path" || !(field as z.ZodType).safeParse(undefined).success,
      ...(description ? { description } : {}),
      schema: fieldSchema,
    };
  });
}

function withoutDialect(schema: JsonSchema): JsonSchema {
  const { $schema: _dialect, $id: _id, ...rest } = schema;
  return rest;
}
