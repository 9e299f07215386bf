import { z } from "zod";
import { contact } from "./resources/contact.js";
import { conversation } from "./resources/conversation.js";
import { webhookEvents, webhookTestData } from "./resources/event.js";
import { message } from "./resources/message.js";
import { tag } from "./resources/tag.js";

type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  const?: unknown;
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  description?: string;
};

/** `message.received` -> `MessageReceivedEvent`. */
function eventInterfaceName(type: string): string {
  return `${type
    .split(/[._]/)
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join("")}Event`;
}

/**
 * TypeScript declarations of every webhook body, generated from the catalogue's schemas
 * (the same as the OpenAPI document's `webhooks`): one interface per event type, the
 * resources they carry, and `ParleyEvent`, their union discriminated by `type`.
 * `@parley/webhook-verify` writes them into its declarations at build time, so that it
 * depends on nothing and `constructEvent` still returns typed events.
 */
export function renderWebhookDeclarations(): string {
  const registry = z.registry<{ id: string }>();
  const named: [string, z.ZodType][] = [
    ["Message", message],
    ["Conversation", conversation],
    ["Contact", contact],
    ["Tag", tag],
    ["WebhookTestData", webhookTestData],
    ...Object.entries(webhookEvents).map(([type, schema]): [string, z.ZodType] => [eventInterfaceName(type), schema]),
  ];
  for (const [id, schema] of named) registry.add(schema, { id });
  const rendered = z.toJSONSchema(registry, { io: "output", target: "draft-2020-12", unrepresentable: "any" });
  const schemas = rendered.schemas as Record<string, JsonSchema>;
  const blocks = named.map(([id]) => {
    const schema = schemas[id];
    if (!schema) throw new Error(`no schema rendered for ${id}`);
    const doc = id.endsWith("Event") ? `/** The webhook body of \`${typeOf(schema)}\`. */\n` : "";
    return `${doc}export interface ${id} ${typeText(schema, "")}`;
  });
  const union = Object.keys(webhookEvents)
    .map((type) => `  | ${eventInterfaceName(type)}`)
    .join("\n");
  return [
    ...blocks,
    "/** Every webhook body Parley sends, discriminated by `type`. */",
    `export type ParleyEvent =\n${union};`,
    "/** The event types of the Parley API (and `webhook.test`). */",
    'export type EventType = ParleyEvent["type"];',
    "",
  ].join("\n");
}

function typeOf(schema: JsonSchema): string {
  return String(schema.properties?.type?.const ?? "");
}

function typeText(schema: JsonSchema, indent: string): string {
  if (schema.$ref) return schema.$ref.replace(/^.*\//, "");
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((value) => JSON.stringify(value)).join(" | ");
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants) return variants.map((variant) => typeText(variant, indent)).join(" | ");
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  if (types.length > 1) return types.map((type) => typeText({ ...schema, type }, indent)).join(" | ");
  switch (types[0]) {
    case "string":
      return "string";
    case "number":
    case "integer":
      return "number";
    case "boolean":
      return "boolean";
    case "null":
      return "null";
    case "array":
      return `Array<${schema.items ? typeText(schema.items, indent) : "unknown"}>`;
    case "object":
      return objectText(schema, indent);
    default:
      return "unknown";
  }
}

function objectText(schema: JsonSchema, indent: string): string {
  const properties = Object.entries(schema.properties ?? {});
  if (properties.length === 0) {
    const values =
      typeof schema.additionalProperties === "object" ? typeText(schema.additionalProperties, indent) : "unknown";
    return `Record<string, ${values}>`;
  }
  const inner = `${indent}  `;
  const required = new Set(schema.required ?? []);
  const lines = properties.map(([name, property]) => {
    const key = /^[A-Za-z_$][\w$]*$/.test(name) ? name : JSON.stringify(name);
    const doc = property.description ? `${inner}/** ${property.description.replaceAll("*/", "* /")} */\n` : "";
    return `${doc}${inner}${key}${required.has(name) ? "" : "?"}: ${typeText(property, inner)};`;
  });
  return `{\n${lines.join("\n")}\n${indent}}`;
}
