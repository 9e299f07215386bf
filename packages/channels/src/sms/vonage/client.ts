import { withTraceContext } from "@parley/tracing";
import { request } from "undici";
import { type ProviderRefusal, providerCallSpan } from "../../provider-span.js";
import { networkFault, VonageApiError, vonageFailure } from "./errors.js";
import { signApplicationJwt } from "./jwt.js";

/** Vonage's API host; `api-eu.nexmo.com`, `api-us.nexmo.com` and `api-ap.nexmo.com` are its regional ones. */
export const VONAGE_API_BASE_URL = "https://api.nexmo.com";

/** Where Vonage is reached: configurable so tests (and proxies, or a region) can stand in. */
export interface VonageOptions {
  /** `VONAGE_API_BASE_URL`, default `https://api.nexmo.com`. */
  baseUrl: string;
  /** Per request, after which the attempt counts as a temporary fault. */
  timeoutMs: number;
}

/** A Vonage application's credentials: its id and the private key its JWTs are signed with. */
export interface VonageCredentials {
  applicationId: string;
  /** PKCS#8 PEM. */
  privateKey: string;
}

export interface SmsToSend {
  /** The recipient in E.164 without `+` (`447700900000`); a leading `+` is dropped. */
  to: string;
  /** The sender: a number without `+`, a short code, or an alphanumeric sender id. */
  from: string;
  text: string;
  /** Comes back on every status callback of the message (Parley's message id). */
  clientRef?: string;
}

/**
 * The Messages API calls Parley makes. `sendSms` resolves with Vonage's `message_uuid`,
 * throws a `TemporaryChannelError` when a retry may succeed, a `VonageAuthError` when Vonage
 * refused the application's JWT, and a `VonageApiError` (Vonage's code and words) when it
 * refused the message for good.
 */
export interface VonageClient {
  sendSms(sms: SmsToSend): Promise<string>;
}

/**
 * The JWT travels in the `Authorization` header only, a fresh one per request; neither it,
 * the key nor a body is ever logged or put in an error.
 */
export function createVonageClient(options: VonageOptions, credentials: VonageCredentials): VonageClient {
  return {
    async sendSms(sms) {
      const body = {
        message_type: "text",
        channel: "sms",
        to: sms.to.replace(/^\+/, ""),
        from: sms.from.replace(/^\+/, ""),
        text: sms.text,
        ...(sms.clientRef === undefined ? {} : { client_ref: sms.clientRef }),
      };
      const answer = await providerCallSpan(
        "Vonage Messages API POST",
        "POST",
        options.baseUrl,
        vonageRefusal,
        async () => {
          const jwt = await signApplicationJwt(credentials);
          return exchange(options, "POST", "/v1/messages", jwt, body);
        },
      );
      const uuid = fieldOf(answer, "message_uuid");
      // Not retried: Vonage may have taken the message, and a duplicate to the customer is worse.
      if (typeof uuid !== "string" || uuid.length === 0) {
        throw new VonageApiError("unexpected_response", "Vonage accepted the message without giving its message_uuid");
      }
      return uuid;
    },
  };
}

/** `${baseUrl}${path}`, whatever slashes the parts bring. */
export function vonageUrl(options: VonageOptions, path: string): string {
  return `${options.baseUrl.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`;
}

type Method = "POST";

/** A refusal of Vonage's API as a span records it (see providerCallSpan). */
function vonageRefusal(error: unknown): ProviderRefusal | undefined {
  return error instanceof VonageApiError ? { status: error.status, code: error.code } : undefined;
}

async function exchange(options: VonageOptions, method: Method, path: string, jwt: string, body: unknown) {
  const json = JSON.stringify(body);
  const headers = {
    authorization: `Bearer ${jwt}`,
    "content-type": "application/json",
    accept: "application/json",
  };
  const signal = AbortSignal.timeout(options.timeoutMs);
  let answer: { status: number; text: string };
  try {
    const response = await request(vonageUrl(options, path), {
      method,
      headers: withTraceContext(headers),
      body: json,
      signal,
    });
    answer = { status: response.statusCode, text: await response.body.text() };
  } catch (error) {
    // No (whole) answer came: a retry may succeed.
    throw networkFault(error, signal.aborted, options.timeoutMs);
  }
  const parsed = parseJson(answer.text);
  if (answer.status < 200 || answer.status >= 300) throw vonageFailure(answer.status, parsed);
  if (parsed === undefined) {
    throw new VonageApiError("unexpected_response", "Vonage answered without JSON", answer.status);
  }
  return parsed;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function fieldOf(value: unknown, key: string): unknown {
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}
