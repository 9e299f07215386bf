import { z } from "zod";

const CROCKFORD_26 = "[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{26}";

/**
 * A prefixed id as the spec pattern-checks it in bodies and query strings: the prefix,
 * then 26 Crockford base-32 characters, case-insensitive. Normalised to the upper case
 * the service emits, so comparisons downstream are exact.
 */
export function prefixedId(prefix: string) {
  return z
    .string()
    .regex(new RegExp(`^${prefix}_${CROCKFORD_26}$`), `must be a ${prefix}_ id`)
    .transform((value) => normalizeId(value));
}

/** Upper-cases the ULID part of an id; path parameters use it too, without the pattern check. */
export function normalizeId(value: string): string {
  const separator = value.indexOf("_");
  if (separator < 0) return value;
  return value.slice(0, separator + 1) + value.slice(separator + 1).toUpperCase();
}

export const timestamp = z.iso.datetime({ precision: 3 }).describe("ISO 8601 UTC timestamp with milliseconds");
/** PostgreSQL has no year 0; a filter before year 1 cannot match anything anyway. */
export const dateTimeFilter = z.iso
  .datetime({ offset: true })
  .refine((value) => !(new Date(value).getUTCFullYear() < 1), "must be a date from year 1 on")
  .transform((value) => new Date(value));

export const metadata = z.record(z.string(), z.unknown()).describe("Free-form map of your own data");

export const environment = z.enum(["live", "test"]);
export type Environment = z.infer<typeof environment>;

export const paginationQuery = {
  limit: z.coerce.number().int().min(1).max(100).default(25).describe("Page size, 1 to 100"),
  after: z
    .string()
    .optional()
    .describe("A `next_cursor` returned earlier; at most 80 characters. Anything else is 422 `invalid_cursor`."),
};

export function listOf<T extends z.ZodType>(item: T) {
  return z.object({
    object: z.literal("list"),
    data: z.array(item),
    pagination: z.object({ has_more: z.boolean(), next_cursor: z.string().nullable() }),
  });
}

export const deleted = (object: string) =>
  z.object({ object: z.literal(object), id: z.string(), deleted: z.literal(true) });
