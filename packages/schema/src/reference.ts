import { z } from "zod";
import { operations } from "./catalogue.js";
import { errorCatalogue } from "./errors.js";
import type { Operation } from "./operation.js";
import { errorsOf, everyRouteErrors } from "./route-errors.js";

type JsonSchema = {
  type?: string | string[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  maxItems?: number;
  default?: unknown;
  description?: string;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
};

const GENERATED_NOTICE = "<!-- Generated from packages/schema by `pnpm run docs`. Do not edit by hand. -->";

function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "");
}

function typeOf(schema: JsonSchema): string {
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants) return variants.map(typeOf).join(" or ");
  if (schema.enum) return schema.enum.map((value) => `\`${String(value)}\``).join(", ");
  if (schema.const !== undefined) return `\`${String(schema.const)}\``;
  if (schema.type === "array") return `array of ${schema.items ? typeOf(schema.items) : "any"}`;
  if (Array.isArray(schema.type)) return schema.type.join(" or ");
  return schema.type ?? "any";
}

function constraintsOf(schema: JsonSchema): string {
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants) return variants.map(constraintsOf).filter(Boolean).join("; ");
  const parts: string[] = [];
  if (schema.format) parts.push(schema.format);
  if (schema.minLength !== undefined && schema.maxLength !== undefined) {
    parts.push(`${schema.minLength} to ${schema.maxLength} chars`);
  } else if (schema.maxLength !== undefined) parts.push(`up to ${schema.maxLength} chars`);
  else if (schema.minLength !== undefined) parts.push(`at least ${schema.minLength} chars`);
  if (schema.minimum !== undefined && schema.maximum !== undefined)
    parts.push(`${schema.minimum} to ${schema.maximum}`);
  if (schema.maxItems !== undefined) parts.push(`up to ${schema.maxItems} items`);
  if (schema.pattern && !schema.format) parts.push(`pattern \`${schema.pattern}\``);
  if (schema.default !== undefined) parts.push(`default \`${JSON.stringify(schema.default)}\``);
  return parts.join("; ");
}

function escapeCell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\n/g, " ");
}

function fieldTable(schema: z.ZodObject, location: string): string[] {
  const rendered = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonSchema;
  const required = new Set(rendered.required ?? []);
  const rows = Object.entries(rendered.properties ?? {}).map(([name, field]) => {
    const notes = [constraintsOf(field), field.description].filter(Boolean).join(". ");
    const isRequired = location === "path" || required.has(name);
    return `| \`${name}\` | ${escapeCell(typeOf(field))} | ${isRequired ? "yes" : "no"} | ${escapeCell(notes)} |`;
  });
  return [`| ${location} field | type | required | notes |`, "|---|---|---|---|", ...rows];
}

function renderOperation(operation: Operation): string[] {
  const lines = [
    `### ${operation.method.toUpperCase()} /v1${operation.path}`,
    "",
    `**${operation.summary}** (\`${operation.id}\`)`,
  ];
  if (operation.description) lines.push("", operation.description);
  lines.push("", operation.scope ? `- Scope: \`${operation.scope}\`` : "- Scope: none (any valid key)");
  const success = operation.responseContentType ? "the file's bytes" : `\`${operation.responseName}\``;
  lines.push(`- Success: \`${operation.status}\` with ${success}`);
  if (operation.requestContentType)
    lines.push(`- Body: \`${operation.requestContentType}\` with the file in the field \`file\``);
  if (operation.findOrCreate) lines.push("- Find-or-create: `200` with the existing resource");
  if (operation.idempotent) lines.push("- Accepts `Idempotency-Key`");
  if (operation.testOnly) lines.push("- Test keys only; a live key gets `404 route_not_found`");
  // What any request can be answered is listed once, in the README.
  const errors = errorsOf(operation).filter((code) => !everyRouteErrors.includes(code));
  lines.push(`- Errors: ${errors.map((code) => `\`${errorCatalogue[code].status} ${code}\``).join(", ")}`);
  for (const [schema, location] of [
    [operation.params, "path"],
    [operation.query, "query"],
    [operation.body, "body"],
  ] as const) {
    if (schema && Object.keys(schema.shape).length > 0) lines.push("", ...fieldTable(schema, location));
  }
  return lines;
}

/** The route reference as Markdown files by name, rendered from the catalogue. */
export function renderReference(): Map<string, string> {
  const groups = new Map<string, Operation[]>();
  for (const operation of operations) groups.set(operation.tag, [...(groups.get(operation.tag) ?? []), operation]);
  const files = new Map<string, string>();
  const index = [
    GENERATED_NOTICE,
    "",
    "# API reference",
    "",
    "Base address: `http://localhost:3000/v1`. Every request carries `Authorization: Bearer <API key>`.",
    "The machine-readable description is served at `/v1/openapi.json`, and an interactive page at `/docs`.",
    "",
    "| method | path | operation | scope |",
    "|---|---|---|---|",
  ];
  for (const [tag, members] of groups) {
    const file = `${slug(tag)}.md`;
    for (const operation of members) {
      const anchor = slug(`${operation.method} /v1${operation.path}`);
      index.push(
        `| ${operation.method.toUpperCase()} | [\`/v1${operation.path}\`](${file}#${anchor}) | \`${operation.id}\` | ${operation.scope ? `\`${operation.scope}\`` : "any key"} |`,
      );
    }
    const body = [GENERATED_NOTICE, "", `# ${tag}`, ""];
    for (const operation of members) body.push(...renderOperation(operation), "");
    files.set(file, `${body.join("\n").trimEnd()}\n`);
  }
  index.push(
    "",
    "## Errors",
    "",
    `Each operation lists its errors; any request can also be answered ${everyRouteErrors
      .map((code) => `\`${errorCatalogue[code].status} ${code}\``)
      .join(", ")}.`,
    "",
    "| status | code | meaning |",
    "|---|---|---|",
  );
  for (const [code, entry] of Object.entries(errorCatalogue))
    index.push(`| ${entry.status} | \`${code}\` | ${entry.description} |`);
  files.set("README.md", `${index.join("\n")}\n`);
  return files;
}
