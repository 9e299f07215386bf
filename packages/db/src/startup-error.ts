/**
 * A start that cannot work: its message is one line saying what is wrong and how to fix it,
 * printed as is (no stack) by `pnpm start`, `pnpm admin` and the worker (README, "If it does
 * not start").
 */
export class StartupError extends Error {
  override readonly name = "StartupError";
}

interface ErrorWithCode {
  code?: unknown;
  errno?: unknown;
  message?: unknown;
  address?: unknown;
  port?: unknown;
  hostname?: unknown;
}

/** Where a PostgreSQL URL points, without its password: `user@host:port/database`. */
export function describeDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const user = parsed.username ? `${decodeURIComponent(parsed.username)}@` : "";
    return `${user}${parsed.hostname}:${parsed.port || "5432"}${parsed.pathname}`;
  } catch {
    return "(not a URL)";
  }
}

/**
 * The one line for a failure to reach or use the PostgreSQL of `source` (`DATABASE_URL`, or
 * the embedded server), or undefined when the error is not one of those.
 */
export function explainDatabaseError(error: unknown, url: string, source: string): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const { code, message } = error as ErrorWithCode;
  const where = `${source} (${describeDatabaseUrl(url)})`;
  const database = (() => {
    try {
      return decodeURIComponent(new URL(url).pathname.slice(1)) || "postgres";
    } catch {
      return "?";
    }
  })();
  switch (code) {
    case "ECONNREFUSED":
      return `Cannot connect to the PostgreSQL of ${where}: connection refused. Start that server, or correct ${source}.`;
    case "ECONNRESET":
      // A server that closes the connection in the handshake: one stopping, or restarting.
      return `Cannot connect to the PostgreSQL of ${where}: the server reset the connection (it is stopping or restarting). Try again in a moment, or check ${source}.`;
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `Cannot connect to the PostgreSQL of ${where}: its host name does not resolve. Correct the host in ${source}.`;
    case "CONNECT_TIMEOUT":
    case "ETIMEDOUT":
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return `Cannot connect to the PostgreSQL of ${where}: no answer (${code}). Check the host, the port and any firewall, or correct ${source}.`;
    case "28P01":
      return `PostgreSQL refused the password for ${where}. Correct the user name or password in ${source}.`;
    case "28000":
      return `PostgreSQL refused the connection for ${where}: ${String(message)}. Allow it in pg_hba.conf, or correct ${source}.`;
    case "3D000":
      return `The database "${database}" does not exist on the server of ${where}. Create it (createdb ${database}) or correct ${source}.`;
    case "42501":
      return `The user of ${where} lacks a privilege Parley needs: ${String(message)}. Grant it (the user must be able to create tables in the database), or use another user in ${source}.`;
    case "57P03":
      return `The PostgreSQL of ${where} is starting up or shutting down. Try again in a moment.`;
    case "SASL_SIGNATURE_MISMATCH":
      return `PostgreSQL's authentication answer for ${where} did not verify. Check ${source}.`;
    default:
      return undefined;
  }
}

/** The oldest PostgreSQL major Parley supports (decisions.md: "any PostgreSQL from 14 on"). */
export const OLDEST_POSTGRES_MAJOR = 14;
