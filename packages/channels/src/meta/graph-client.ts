import { withTraceContext } from "@parley/tracing";
import { request } from "undici";
import { type MetaOptions, TemporaryChannelError } from "../adapter.js";
import { type ProviderRefusal, providerCallSpan } from "../provider-span.js";
import { readAtMost } from "../read-at-most.js";
import { graphFailure, MetaGraphError, networkFault } from "./errors.js";

export interface DownloadOptions {
  /**
   * Send the access token. WhatsApp's media URLs need it; Messenger's and Instagram's
   * attachment URLs are signed CDN links that do not, so the token is not shown to them.
   */
  bearer?: boolean;
  /** Larger files fail with `media_too_large` without being read to the end. */
  maxBytes?: number;
}

export interface Download {
  bytes: Buffer;
  contentType: string | null;
}

/**
 * The few Graph API calls Parley makes. Each resolves with the response's JSON, throws a
 * `TemporaryChannelError` when a retry may succeed, and a `MetaGraphError` (Meta's code
 * and message) when Meta refused for good.
 */
export interface GraphClient {
  post(path: string, body: unknown): Promise<unknown>;
  get(path: string): Promise<unknown>;
  /** An absolute URL (a media URL Meta gave out). */
  download(url: string, options?: DownloadOptions): Promise<Download>;
}

type Method = "GET" | "POST";

/**
 * The access token travels in the `Authorization` header only: never in a URL, which ends
 * up in proxy and server logs, and never in an error message.
 */
export function createGraphClient(options: MetaOptions, accessToken: string): GraphClient {
  const bearer = { authorization: `Bearer ${accessToken}` };
  const call = (method: Method, path: string, body?: unknown) =>
    providerCallSpan(`Graph API ${method}`, method, options.graphBaseUrl, graphRefusal, () =>
      exchange(options, method, graphUrl(options, path), bearer, body),
    );
  return {
    post: (path, body) => call("POST", path, body),
    get: (path) => call("GET", path),
    download: (url, download = {}) =>
      providerCallSpan("Graph API download", "GET", url, graphRefusal, () =>
        fetchBytes(options, url, download.bearer === false ? {} : bearer, download.maxBytes ?? Infinity),
      ),
  };
}

/** A refusal of the Graph API as a span records it (see providerCallSpan). */
function graphRefusal(error: unknown): ProviderRefusal | undefined {
  return error instanceof MetaGraphError ? { status: error.status, code: error.code } : undefined;
}

/** `${graphBaseUrl}/${apiVersion}/${path}`, whatever slashes the parts bring. */
export function graphUrl(options: MetaOptions, path: string): string {
  const base = options.graphBaseUrl.replace(/\/+$/, "");
  return `${base}/${options.apiVersion}/${path.replace(/^\/+/, "")}`;
}

async function exchange(
  options: MetaOptions,
  method: Method,
  url: string,
  auth: Record<string, string>,
  body: unknown,
): Promise<unknown> {
  const json = body === undefined ? undefined : JSON.stringify(body);
  const headers = json === undefined ? auth : { ...auth, "content-type": "application/json" };
  const { status, text } = await withTimeout(options, async (signal) => {
    const response = await request(url, { method, headers: withTraceContext(headers), body: json, signal });
    return { status: response.statusCode, text: await response.body.text() };
  });
  const parsed = parseJson(text);
  if (status < 200 || status >= 300) throw permanent(status, parsed);
  // Not retried: Meta may have carried the send out, and a duplicate to the customer is worse.
  if (parsed === undefined) throw new MetaGraphError("unexpected_response", "Meta answered without JSON", status);
  return parsed;
}

async function fetchBytes(
  options: MetaOptions,
  url: string,
  auth: Record<string, string>,
  maxBytes: number,
): Promise<Download> {
  return withTimeout(options, async (signal) => {
    const response = await request(url, { method: "GET", headers: withTraceContext(auth), signal });
    if (response.statusCode < 200 || response.statusCode >= 300) {
      throw permanent(response.statusCode, parseJson(await response.body.text()));
    }
    const declared = Number(response.headers["content-length"]);
    if (declared > maxBytes) {
      // Drops the connection rather than reading a file that will be refused.
      await response.body.dump({ limit: 1 });
      throw tooLarge(maxBytes);
    }
    const bytes = await readAtMost(response.body, maxBytes, tooLarge);
    return { bytes, contentType: headerOf(response.headers["content-type"]) };
  });
}

function tooLarge(maxBytes: number): MetaGraphError {
  return new MetaGraphError("media_too_large", `The file is larger than ${maxBytes} bytes`);
}

/** Runs one request under the configured deadline; no answer in time is a temporary fault. */
async function withTimeout<T>(options: MetaOptions, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const signal = AbortSignal.timeout(options.timeoutMs);
  try {
    return await run(signal);
  } catch (error) {
    // Answers already classified pass through; anything else means no (whole) answer came.
    if (error instanceof MetaGraphError || error instanceof TemporaryChannelError) throw error;
    throw networkFault(error, signal.aborted, options.timeoutMs);
  }
}

/** A non-2xx answer: `graphFailure` throws the temporary ones; the rest are refusals. */
function permanent(status: number, body: unknown): MetaGraphError {
  const error = graphFailure(status, body);
  return new MetaGraphError(error.code, error.message, status);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function headerOf(value: string | string[] | undefined): string | null {
  const first = Array.isArray(value) ? value[0] : value;
  return first && first.length > 0 ? first : null;
}
