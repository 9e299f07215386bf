import fc from "fast-check";
import type { z } from "zod";

/**
 * fast-check arbitraries built from the catalogue's zod schemas (the shapes it uses:
 * objects, strings with lengths, formats and id patterns, enums, literals, numbers,
 * booleans, arrays, records, unions, optional, nullable, default, pipes), and hostile
 * values to mutate them with.
 */

export interface SchemaContext {
  /** Ids for a prefix (`cnt`, `tag`...): mostly real ones of the fixtures. */
  idOf(prefix: string): fc.Arbitrary<string>;
  /** A field-specific arbitrary replacing the schema's, by field name (e.g. webhook `url`). */
  field?(name: string): fc.Arbitrary<unknown> | undefined;
}

interface Def {
  type: string;
  format?: string;
  pattern?: RegExp;
  coerce?: boolean;
  checks?: { _zod: { def: CheckDef } }[];
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  element?: z.ZodType;
  keyType?: z.ZodType;
  valueType?: z.ZodType;
  entries?: Record<string, string>;
  options?: z.ZodType[];
  values?: unknown[];
}

interface CheckDef {
  check: string;
  minimum?: number;
  maximum?: number;
  value?: number;
  inclusive?: boolean;
  format?: string;
  pattern?: RegExp;
}

export function defOf(schema: z.ZodType): Def {
  return (schema as unknown as { _zod: { def: Def } })._zod.def;
}

function checksOf(def: Def): CheckDef[] {
  return (def.checks ?? []).map((check) => check._zod.def);
}

const ID_PATTERN = /^\^([a-z]+)_\[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z\]\{26\}\$$/;

/** The prefix of a `prefixedId` pattern, if the pattern is one. */
export function idPrefixOf(pattern: RegExp | undefined): string | undefined {
  return pattern ? ID_PATTERN.exec(pattern.source)?.[1] : undefined;
}

const textUnit = fc.constantFrom<"grapheme" | "grapheme-ascii" | "binary">("grapheme-ascii", "grapheme", "binary");

function textOf(minLength: number, maxLength: number): fc.Arbitrary<string> {
  const short = Math.min(maxLength, Math.max(minLength, 24));
  const bounded = textUnit.chain((unit) => fc.string({ unit, minLength, maxLength: short }));
  const atMax = fc.string({ unit: "grapheme-ascii", minLength: maxLength, maxLength });
  return maxLength > short ? fc.oneof({ weight: 8, arbitrary: bounded }, { weight: 1, arbitrary: atMax }) : bounded;
}

/** ISO 8601 as the API accepts it: UTC or an offset, years 1 to 9999. */
export const dateTimeText = fc
  .tuple(
    fc.date({ min: new Date("0001-01-02T00:00:00Z"), max: new Date("9999-12-30T00:00:00Z"), noInvalidDate: true }),
    fc.constantFrom("Z", "+00:00", "+14:00", "-12:00", "+05:30"),
    fc.boolean(),
  )
  .map(([date, zone, millis]) => {
    const iso = date.toISOString();
    const base = millis ? iso.slice(0, 23) : iso.slice(0, 19);
    return `${base}${zone}`;
  });

const emailText = fc.oneof(
  fc.emailAddress(),
  fc.constantFrom("ada@example.com", "ADA@EXAMPLE.COM", "o'brien+tag@example.co.uk"),
);

const urlText = fc.oneof(fc.webUrl(), fc.constantFrom("https://example.com/a.png", "http://127.0.0.1:9/x"));

/** An arbitrary of valid values (as far as the schema's shape goes) for a zod schema. */
export function arbitraryOf(schema: z.ZodType, context: SchemaContext, name = ""): fc.Arbitrary<unknown> {
  const override = name ? context.field?.(name) : undefined;
  if (override) return override;
  const def = defOf(schema);
  switch (def.type) {
    case "object":
      return objectOf(def.shape ?? {}, context);
    case "optional":
    case "default":
      return arbitraryOf(def.innerType as z.ZodType, context, name);
    case "nullable":
      return fc.oneof(
        { weight: 4, arbitrary: arbitraryOf(def.innerType as z.ZodType, context, name) },
        { weight: 1, arbitrary: fc.constant(null) },
      );
    case "pipe":
      return arbitraryOf(def.in as z.ZodType, context, name);
    case "string":
      return stringOf(def, context);
    case "number": {
      const checks = checksOf(def);
      const min = checks.find((check) => check.check === "greater_than")?.value ?? -1_000_000;
      const max = checks.find((check) => check.check === "less_than")?.value ?? 1_000_000;
      const integer = checks.some((check) => check.format === "safeint");
      return integer ? fc.integer({ min, max }) : fc.double({ min, max, noNaN: true });
    }
    case "boolean":
      return fc.boolean();
    case "enum":
      return fc.constantFrom(...Object.values(def.entries ?? {}));
    case "literal":
      return fc.constantFrom(...(def.values ?? []));
    case "union":
      return fc.oneof(...(def.options ?? []).map((option) => arbitraryOf(option, context)));
    case "array": {
      const checks = checksOf(def);
      const minLength = checks.find((check) => check.check === "min_length")?.minimum ?? 0;
      const maxLength = checks.find((check) => check.check === "max_length")?.maximum ?? 10;
      return fc.array(arbitraryOf(def.element as z.ZodType, context), {
        minLength,
        maxLength: Math.max(minLength, Math.min(maxLength, 4)),
      });
    }
    case "record":
      return fc.dictionary(
        arbitraryOf(def.keyType as z.ZodType, context) as fc.Arbitrary<string>,
        arbitraryOf(def.valueType as z.ZodType, context),
        { maxKeys: 4 },
      );
    case "unknown":
    case "any":
      return fc.jsonValue({ maxDepth: 3 });
    default:
      throw new Error(`no arbitrary for zod type ${def.type}`);
  }
}

function stringOf(def: Def, context: SchemaContext): fc.Arbitrary<string> {
  const checks = checksOf(def);
  if (def.format === "email") return emailText;
  if (def.format === "url") return urlText;
  if (def.format === "datetime") return dateTimeText;
  const regex = def.pattern ?? checks.find((check) => check.format === "regex")?.pattern;
  const prefix = idPrefixOf(regex);
  if (prefix) return context.idOf(prefix);
  if (regex) return fc.stringMatching(regex);
  const minLength = checks.find((check) => check.check === "min_length")?.minimum ?? 0;
  const maxLength = checks.find((check) => check.check === "max_length")?.maximum ?? 64;
  return textOf(minLength, maxLength);
}

function isOptional(schema: z.ZodType): boolean {
  const type = defOf(schema).type;
  return type === "optional" || type === "default";
}

function objectOf(shape: Record<string, z.ZodType>, context: SchemaContext) {
  const fields = Object.fromEntries(
    Object.entries(shape).map(([name, schema]) => [name, arbitraryOf(schema, context, name)]),
  );
  const requiredKeys = Object.entries(shape)
    .filter(([, schema]) => !isOptional(schema))
    .map(([name]) => name);
  return fc.record(fields, { requiredKeys });
}

/** Strings that have broken parsers, queries and headers somewhere. */
export const HOSTILE_STRINGS = [
  "",
  " ",
  "'; drop table contacts; --",
  "' OR '1'='1",
  '" OR 1=1 --',
  "1; select pg_sleep(5)",
  "') union select * from api_keys --",
  "\\",
  "%",
  "_",
  "%_%",
  '{"$gt":""}',
  '{"$ne":null}',
  "[object Object]",
  "../../etc/passwd",
  "..\\..\\windows\\win.ini",
  "/etc/passwd\u0000.png",
  "a\r\nX-Injected: 1",
  "\r\n\r\n<html>",
  "\u0000",
  "nul\u0000byte",
  "%00",
  "\ud800",
  "lone \udfff low",
  "\ufeffbom",
  "\u202eevil\u202c",
  "e\u0301\u0301\u0301\u0301",
  "🦄🏳️‍🌈👩‍👩‍👧‍👦",
  "ǅİßﬀẞ",
  "<script>alert(1)</script>",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a log4j lookup, meant literally.
  "${jndi:ldap://127.0.0.1/a}",
  "{{7*7}}",
  "%s%s%s%n",
  "null",
  "undefined",
  "NaN",
  "-1",
  "0",
  "1e309",
  "0x10",
  "__proto__",
  "constructor",
  "true",
  "cnt_00000000000000000000000000",
  "tag_0000000000000000000000000U",
  "x".repeat(255),
  "x".repeat(4097),
  "\t\n\u000b\f\r",
  "\u0085\u2028\u2029",
];

export const hostileString = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 40 }) },
  { weight: 1, arbitrary: fc.integer({ min: 10_000, max: 120_000 }).map((length) => "é".repeat(length)) },
);

const RAW_JSON = Symbol("raw JSON");

/** A value serialised as the given JSON text by `toJson`, whatever its depth. */
export interface RawJson {
  [RAW_JSON]: string;
}

/**
 * JSON nested `depth` levels deep (`[[[...]]]` or `{"a":{"a":...}}`), kept as text: the
 * client's own JSON.stringify would overflow its stack long before the server's does.
 */
export function nested(depth: number, kind: "array" | "object"): RawJson {
  const text =
    kind === "array" ? `${"[".repeat(depth)}${"]".repeat(depth)}` : `${'{"a":'.repeat(depth)}{}${"}".repeat(depth)}`;
  return { [RAW_JSON]: text };
}

/** JSON.stringify, with every `nested(...)` value written as its text. */
export function toJson(value: unknown): string {
  const raws: string[] = [];
  const text =
    JSON.stringify(value, (_key, item) => {
      if (typeof item === "object" && item !== null && RAW_JSON in item) {
        raws.push((item as RawJson)[RAW_JSON]);
        return `\u0001raw${raws.length - 1}\u0001`;
      }
      return item;
    }) ?? "null";
  return text.replace(/"\\u0001raw(\d+)\\u0001"/g, (_match, index: string) => raws[Number(index)] as string);
}

export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: hostileString },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double() },
  { weight: 1, arbitrary: fc.constantFrom(true, false, null, [], {}, [null], { $gt: "" }, 1e308, -0) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.array(hostileString, { maxLength: 3 }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom(63, 64, 65, 200, 1_000, 5_000, 50_000),
        fc.constantFrom<"array" | "object">("array", "object"),
      )
      .map(([depth, kind]) => nested(depth, kind)),
  },
);

/** Names a body or query might carry that the schema does not know. */
export const extraKeys = fc.constantFrom(
  "__proto__",
  "constructor",
  "prototype",
  "id",
  "object",
  "organization_id",
  "environment",
  "created_at",
  "$where",
  "unknown_field",
  "",
  "a.b",
  "tags[0]",
  "\u0000",
);

type Mutation = { kind: "set"; field: string; value: unknown } | { kind: "delete"; field: string };

/** A valid object with one to three fields replaced by hostile values, removed, or added. */
export function mutatedObject(valid: fc.Arbitrary<unknown>, fields: string[]): fc.Arbitrary<unknown> {
  const fieldName = fields.length > 0 ? fc.oneof(fc.constantFrom(...fields), extraKeys) : extraKeys;
  const mutation: fc.Arbitrary<Mutation> = fc.oneof(
    { weight: 5, arbitrary: fc.record({ kind: fc.constant("set" as const), field: fieldName, value: hostileValue }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("delete" as const), field: fieldName }) },
  );
  return fc.tuple(valid, fc.array(mutation, { minLength: 1, maxLength: 3 })).map(([value, mutations]) => {
    const object: Record<string, unknown> = { ...(value as Record<string, unknown>) };
    for (const change of mutations) {
      if (change.kind === "delete") delete object[change.field];
      // defineProperty: `__proto__` becomes an own key, as JSON.parse makes it.
      else
        Object.defineProperty(object, change.field, {
          value: change.value,
          enumerable: true,
          writable: true,
          configurable: true,
        });
    }
    return object;
  });
}

/** Path segments sent exactly as written (percent-encoding included). */
export const RAW_SEGMENTS = [
  "%00",
  "cnt_%00",
  "%ZZ",
  "%E0%A4%A",
  "%ED%A0%80",
  "%C0%AF",
  "%FF%FE",
  "..",
  ".",
  "%2e%2e",
  "..%2F..%2Fetc%2Fpasswd",
  "%2F",
  "%5C..%5C",
  "%20",
  "%0D%0AX-Injected:%201",
  "%25",
  "%u0041",
  "~",
  "*",
  "$",
  "null",
  "%7B%22%24gt%22%3A%22%22%7D",
  "%27%3B%20drop%20table%20contacts%3B%20--",
];

/**
 * Percent-encodes text as a path segment or query component. A lone surrogate has no UTF-8
 * form: it is written as the three bytes WTF-8 gives it, which no valid UTF-8 decoder accepts.
 */
export function encodeComponent(text: string): string {
  if (text.isWellFormed()) return encodeURIComponent(text);
  let out = "";
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    const isHigh = unit >= 0xd800 && unit <= 0xdbff;
    const next = text.charCodeAt(index + 1);
    if (isHigh && next >= 0xdc00 && next <= 0xdfff) {
      out += encodeURIComponent(text.slice(index, index + 2));
      index++;
    } else if (unit >= 0xd800 && unit <= 0xdfff) {
      const bytes = [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)];
      out += bytes.map((byte) => `%${byte.toString(16).toUpperCase()}`).join("");
    } else {
      out += encodeURIComponent(text[index] as string);
    }
  }
  return out;
}
