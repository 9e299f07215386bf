/**
 * A JSON value as a jsonb column gives it back: PostgreSQL keeps an object's keys sorted,
 * shorter keys first, then by their UTF-8 bytes. A row answered without reading it back
 * (a send) shows its JSON columns as later reads will.
 */
export function asJsonb<T>(value: T): T {
  if (Array.isArray(value)) return value.map(asJsonb) as T;
  if (typeof value !== "object" || value === null) return value;
  const entries = Object.entries(value)
    .filter(([, item]) => item !== undefined)
    .map(([key, item]) => [Buffer.from(key, "utf8"), key, asJsonb(item)] as const)
    .sort(([a], [b]) => a.length - b.length || Buffer.compare(a, b));
  return Object.fromEntries(entries.map(([, key, item]) => [key, item])) as T;
}
