/** postgres.js's own codes for a connection that failed or went away. */
const lostConnectionCodes = new Set([
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ENOTFOUND",
  "ETIMEDOUT",
]);

/** SQLSTATE classes 08 (connection exception) and 57P (operator intervention: shutdown, restart). */
function isUnavailableState(code: string): boolean {
  return code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03";
}

/**
 * Whether a query failed because the database went away (a restart, a failover) rather
 * than for what it asked: its transaction never committed, and a retry shortly after will
 * work. Looks through drizzle's wrapper (`cause`) to postgres.js's error.
 */
export function isLostConnection(error: unknown): boolean {
  const code = errorCodeOf(error);
  return code !== undefined && (lostConnectionCodes.has(code) || isUnavailableState(code));
}

/**
 * A failed query's code: PostgreSQL's SQLSTATE, or postgres.js's own for a connection
 * (`ECONNRESET`, `CONNECTION_CLOSED`...). Looks through drizzle's wrapper (`cause`).
 */
export function errorCodeOf(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const cause = "cause" in error && typeof error.cause === "object" && error.cause !== null ? error.cause : error;
  return "code" in cause && typeof cause.code === "string" ? cause.code : undefined;
}
