import { TemporaryChannelError } from "../../adapter.js";

/**
 * Twilio's REST API (`api.twilio.com/2010-04-01`) answers a refusal with
 * `{"code": 21211, "message": "...", "more_info": "https://www.twilio.com/docs/errors/21211", "status": 400}`.
 * See https://www.twilio.com/docs/usage/twilios-response and https://www.twilio.com/docs/api/errors
 */
export interface TwilioErrorBody {
  code: number | null;
  message: string | null;
  moreInfo: string | null;
}

/** What a refusal carries besides its message. */
export interface TwilioRefusal {
  /** Twilio's error code (21211, 21610...); null when the answer carried none. */
  code?: number | null;
  /** The HTTP status; null when the refusal is Parley's own (a file too large). */
  status?: number | null;
  moreInfo?: string | null;
  /** Parley's code for a refusal Twilio did not make (`media_too_large`, `unexpected_response`). */
  parleyCode?: string;
}

/** A permanent refusal by Twilio, with its numeric error code (untranslated) when it gave one. */
export class TwilioApiError extends Error {
  override name = "TwilioApiError";
  readonly code: number | null;
  readonly status: number | null;
  readonly moreInfo: string | null;
  readonly parleyCode: string | null;

  constructor(message: string, refusal: TwilioRefusal = {}) {
    super(message);
    this.code = refusal.code ?? null;
    this.status = refusal.status ?? null;
    this.moreInfo = refusal.moreInfo ?? null;
    this.parleyCode = refusal.parleyCode ?? null;
  }

  /** As a message's error: Twilio's code as text (`"21610"`), else Parley's code, else `http_<status>`. */
  toProviderError(): { code: string; message: string } {
    const code = this.code !== null ? String(this.code) : (this.parleyCode ?? `http_${this.status ?? 0}`);
    return { code, message: this.message };
  }
}

/**
 * Twilio refused the channel's credentials (HTTP 401, error 20003 "Authenticate"): no send
 * works until they are replaced, so the channel needs attention.
 */
export class TwilioAuthError extends TwilioApiError {
  override name = "TwilioAuthError";
}

/** Twilio's "Authenticate": the Account SID, Auth Token or API key was refused. */
export const TWILIO_AUTHENTICATE = 20003;

/**
 * The codes of a send's `failed` result that mean the credentials stopped working: the
 * channel should go `needs_attention` (the twin of Meta's `190`). `http_401` is a 401
 * without Twilio's JSON body (a proxy in between).
 */
export const TWILIO_CREDENTIAL_ERROR_CODES: readonly string[] = [String(TWILIO_AUTHENTICATE), "http_401"];

export function isTwilioCredentialRefusal(error: { code: string }): boolean {
  return TWILIO_CREDENTIAL_ERROR_CODES.includes(error.code);
}

/**
 * Codes that describe a passing condition even with a 4xx, so a send is retried later:
 * - 20429 Too Many Requests (the account's API concurrency; comes with HTTP 429)
 * - 21611 This 'From' number has exceeded the maximum number of queued messages (10 hours' worth)
 * - 63017 Rate limit exceeded (the account's combined 2000 messages a second)
 */
const TEMPORARY_CODES: ReadonlySet<number> = new Set([20429, 21611, 63017]);

/** Reads Twilio's error body; null when the body is not one (an HTML page from a proxy). */
export function twilioErrorOf(body: unknown): TwilioErrorBody | null {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return null;
  const record = body as Record<string, unknown>;
  const code = typeof record.code === "number" && Number.isInteger(record.code) ? record.code : null;
  const message = typeof record.message === "string" && record.message.length > 0 ? record.message : null;
  if (code === null && message === null) return null;
  const moreInfo = typeof record.more_info === "string" ? record.more_info : null;
  return { code, message, moreInfo };
}

/**
 * Classifies a non-2xx answer: throws a `TemporaryChannelError` when a retry may succeed
 * (429, 408, 5xx, or a temporary code); returns a `TwilioAuthError` for refused credentials
 * and a `TwilioApiError` for any other refusal.
 */
export function twilioFailure(status: number, body: unknown): TwilioApiError {
  const error = twilioErrorOf(body);
  if (status >= 500 || status === 429 || status === 408 || (error?.code != null && TEMPORARY_CODES.has(error.code))) {
    throw new TemporaryChannelError(describe(status, error));
  }
  const message = error?.message ?? `Twilio answered HTTP ${status}`;
  const Refusal = status === 401 || error?.code === TWILIO_AUTHENTICATE ? TwilioAuthError : TwilioApiError;
  return new Refusal(message, { code: error?.code ?? null, status, moreInfo: error?.moreInfo ?? null });
}

/** A request that got no answer: refused connection, reset, DNS failure or timeout. */
export function networkFault(cause: unknown, timedOut: boolean, timeoutMs: number): TemporaryChannelError {
  if (timedOut) return new TemporaryChannelError(`Twilio did not answer within ${timeoutMs} ms`);
  const code = typeof cause === "object" && cause !== null ? (cause as Record<string, unknown>).code : undefined;
  const reason = typeof code === "string" ? code : cause instanceof Error ? cause.message : String(cause);
  return new TemporaryChannelError(`Twilio could not be reached: ${reason}`);
}

/** When every retry fails this becomes the message's `provider_unavailable` error: Twilio's own words and code. */
function describe(status: number, error: TwilioErrorBody | null): string {
  if (!error?.message) return `Twilio answered HTTP ${status}`;
  return error.code === null ? error.message : `${error.message} (code ${error.code})`;
}
