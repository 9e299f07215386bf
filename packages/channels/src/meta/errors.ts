import { TemporaryChannelError } from "../adapter.js";

/**
 * Graph API error codes that describe a passing condition: throttling or an outage on
 * Meta's side. A send that hits one is retried with backoff instead of failing the message.
 * See https://developers.facebook.com/docs/graph-api/guides/error-handling/ and
 * https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/
 *
 * - 1      API Unknown: "possibly a temporary issue due to downtime"
 * - 2      API Service: "temporary issue due to downtime"
 * - 4      API Too Many Calls (application rate limit)
 * - 17     API User Too Many Calls
 * - 32     Page request limit reached
 * - 341    Application limit reached
 * - 613    Calls to this API have exceeded the rate limit
 * - 80007  WhatsApp Business Account rate limit reached
 * - 130429 Cloud API message throughput reached
 * - 131016 Service unavailable
 * - 131048 Spam rate limit hit
 * - 131056 Too many messages to one recipient (pair rate limit)
 * - 133004 Server temporarily unavailable
 *
 * 131000 ("Something went wrong") is deliberately absent: it is only retried when it comes
 * with an HTTP 5xx, which every 5xx is anyway; with a 4xx Meta has judged the request itself.
 */
const TEMPORARY_CODES: ReadonlySet<number> = new Set([
  1, 2, 4, 17, 32, 341, 613, 80007, 130429, 131016, 131048, 131056, 133004,
]);

/** HTTP statuses that say "later", whatever the body: overload, timeouts, throttling. */
function isTemporaryStatus(status: number): boolean {
  return status >= 500 || status === 429 || status === 408;
}

/** The `error` object of a Graph API error body, as far as it is present. */
export interface GraphError {
  code: number | null;
  subcode: number | null;
  message: string | null;
  type: string | null;
  /** WhatsApp's `error_data.details`: a longer explanation, kept for diagnostics. */
  details: string | null;
  fbtraceId: string | null;
  /** Graph's own hint that retrying may succeed. */
  isTransient: boolean;
}

/** A permanent failure as Parley records it: Meta's code and message, untranslated. */
export interface ProviderError {
  code: string;
  message: string;
}

/**
 * A permanent refusal by the Graph API (or a file host), thrown by the Graph client so
 * callers can tell it from a temporary fault, which is a `TemporaryChannelError`.
 */
export class MetaGraphError extends Error {
  override name = "MetaGraphError";
  constructor(
    readonly code: string,
    message: string,
    readonly status: number | null = null,
  ) {
    super(message);
  }

  toProviderError(): ProviderError {
    return { code: this.code, message: this.message };
  }
}

/** Reads Graph's `{"error":{...}}` body; null when the body is not one (an HTML proxy page, say). */
export function graphErrorOf(body: unknown): GraphError | null {
  const error = recordOf(recordOf(body)?.error);
  if (!error) return null;
  const data = recordOf(error.error_data);
  return {
    code: integerOf(error.code),
    subcode: integerOf(error.error_subcode),
    message: stringOf(error.message),
    type: stringOf(error.type),
    details: stringOf(data?.details),
    fbtraceId: stringOf(error.fbtrace_id),
    isTransient: error.is_transient === true,
  };
}

export function isTemporaryGraphFailure(status: number, error: GraphError | null): boolean {
  if (isTemporaryStatus(status)) return true;
  if (!error) return false;
  return error.isTransient || (error.code !== null && TEMPORARY_CODES.has(error.code));
}

/**
 * Classifies a failed (non-2xx) Graph response: throws a `TemporaryChannelError` when a
 * retry may succeed, else returns the permanent error with Meta's code and message.
 */
export function graphFailure(status: number, body: unknown): ProviderError {
  const error = graphErrorOf(body);
  if (isTemporaryGraphFailure(status, error)) throw new TemporaryChannelError(describe(status, error));
  if (error?.code != null) return { code: String(error.code), message: error.message ?? `HTTP ${status}` };
  // Not a Graph error body: a gateway or file host answered. The status is all there is.
  return { code: `http_${status}`, message: `Meta answered HTTP ${status}` };
}

/** A request that got no answer: refused connection, reset, DNS failure or timeout. */
export function networkFault(cause: unknown, timedOut: boolean, timeoutMs: number): TemporaryChannelError {
  if (timedOut) return new TemporaryChannelError(`Meta did not answer within ${timeoutMs} ms`);
  const code = recordOf(cause)?.code;
  const reason = typeof code === "string" ? code : cause instanceof Error ? cause.message : String(cause);
  return new TemporaryChannelError(`Meta could not be reached: ${reason}`);
}

/**
 * The message of a temporary fault. When every retry fails it becomes the message's
 * `provider_unavailable` error, so it carries Meta's own words and code.
 */
function describe(status: number, error: GraphError | null): string {
  if (!error?.message) return `Meta answered HTTP ${status}`;
  const code = error.code === null ? "" : ` (code ${error.code})`;
  return `${error.message}${code}`;
}

function recordOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function integerOf(value: unknown): number | null {
  if (typeof value === "number" && Number.isInteger(value)) return value;
  if (typeof value === "string" && /^\d+$/.test(value)) return Number(value);
  return null;
}

function stringOf(value: unknown): string | null {
  return typeof value === "string" && value.length > 0 ? value : null;
}
