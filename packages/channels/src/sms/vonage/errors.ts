import { TemporaryChannelError } from "../../adapter.js";

/**
 * Vonage answers a refused request with an RFC 7807 problem (`application/problem+json`):
 * `{"type":"https://developer.vonage.com/api-errors/messages#1120","title":"Illegal Sender
 * Address - rejected","detail":"...","instance":"<trace id>"}`. The code is the fragment of
 * `type` (`1120`; `unauthorized` for a 401), as Vonage's API errors pages list them.
 * See https://developer.vonage.com/en/api-errors and https://developer.vonage.com/en/api-errors/messages
 */
export interface VonageProblem {
  type: string | null;
  title: string | null;
  detail: string | null;
  instance: string | null;
}

/** The code of Vonage's generic 401 problem: the application's JWT was refused. */
export const VONAGE_UNAUTHORIZED = "unauthorized";

/**
 * Messages API codes that say "later" whatever the HTTP status: 1000 Throttled ("Please wait
 * and retry"), 1100 Communication Failed ("Message was not submitted because there was a
 * communication failure"). Everything 5xx, 429 or 408 is temporary anyway.
 */
const TEMPORARY_CODES: ReadonlySet<string> = new Set(["1000", "1100"]);

/** A permanent refusal by Vonage, with its code and words untranslated. */
export class VonageApiError extends Error {
  override name = "VonageApiError";
  constructor(
    readonly code: string,
    message: string,
    readonly status: number | null = null,
  ) {
    super(message);
  }

  toProviderError(): { code: string; message: string } {
    return { code: this.code, message: this.message };
  }
}

/**
 * Vonage refused the application's credentials (HTTP 401): the JWT's key is not the
 * application's public key, the application id is wrong or deleted. No send works until the
 * channel's settings are replaced, so the channel needs attention.
 */
export class VonageAuthError extends VonageApiError {
  override name = "VonageAuthError";
}

/** Reads a problem body; null when the body is not one (an HTML page from a proxy, say). */
export function problemOf(body: unknown): VonageProblem | null {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return null;
  const record = body as Record<string, unknown>;
  const problem = {
    type: textOf(record.type),
    title: textOf(record.title),
    detail: textOf(record.detail),
    instance: textOf(record.instance),
  };
  return problem.type === null && problem.title === null && problem.detail === null ? null : problem;
}

/**
 * Vonage's code for a problem: the fragment of `type` (`...messages#1120` → `1120`), else
 * `title` (status callbacks put the code there too), else the last path segment of `type`.
 */
export function problemCode(problem: VonageProblem): string | null {
  const url = problem.type ? urlOf(problem.type) : null;
  const fragment = url ? decoded(url.hash.slice(1)) : "";
  if (fragment) return fragment;
  if (problem.title) return problem.title;
  const segment = url?.pathname.split("/").filter(Boolean).pop();
  return segment ?? null;
}

/** Vonage's own words: `title: detail`, or whichever of them there is. */
export function problemMessage(problem: VonageProblem): string | null {
  const { title, detail } = problem;
  if (title && detail && title !== detail) return `${title}: ${detail}`;
  return detail ?? title;
}

/**
 * Classifies a non-2xx answer: throws a `TemporaryChannelError` when a retry may succeed,
 * returns the refusal (a `VonageAuthError` for a 401) otherwise.
 */
export function vonageFailure(status: number, body: unknown): VonageApiError {
  const problem = problemOf(body);
  const code = problem ? problemCode(problem) : null;
  const words = problem ? problemMessage(problem) : null;
  const message = words ?? `Vonage answered HTTP ${status}`;
  if (status >= 500 || status === 429 || status === 408 || (code !== null && TEMPORARY_CODES.has(code))) {
    throw new TemporaryChannelError(code === null ? `${message} (HTTP ${status})` : `${message} (code ${code})`);
  }
  if (status === 401) return new VonageAuthError(VONAGE_UNAUTHORIZED, message, status);
  return new VonageApiError(code ?? `http_${status}`, message, status);
}

/** A request that got no answer: refused connection, reset, DNS failure or timeout. */
export function networkFault(cause: unknown, timedOut: boolean, timeoutMs: number): TemporaryChannelError {
  if (timedOut) return new TemporaryChannelError(`Vonage did not answer within ${timeoutMs} ms`);
  const code = typeof cause === "object" && cause !== null ? (cause as { code?: unknown }).code : undefined;
  const reason = typeof code === "string" ? code : cause instanceof Error ? cause.message : String(cause);
  return new TemporaryChannelError(`Vonage could not be reached: ${reason}`);
}

function textOf(value: unknown): string | null {
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  return typeof value === "string" && value.trim().length > 0 ? value.trim() : null;
}

function decoded(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

function urlOf(value: string): URL | null {
  try {
    return new URL(value);
  } catch {
    return null;
  }
}
