import type { Route } from "@parley/schema/runtime";
import { ConnectionError, errorFromResponse, ParleyError, TimeoutError } from "./errors.js";

export interface ClientOptions {
  /** Defaults to `PARLEY_API_KEY`. */
  apiKey?: string;
  /** Defaults to `PARLEY_BASE_URL`, then `http://localhost:3000/v1`. */
  baseUrl?: string;
  /** Milliseconds per attempt; 60 s by default. */
  timeout?: number;
  /** Retries of a retryable failure; 2 by default. */
  maxRetries?: number;
  /** A `fetch` implementation (tests, proxies); the runtime's by default. */
  fetch?: typeof fetch;
}

export interface RequestOptions {
  timeout?: number;
  maxRetries?: number;
  signal?: AbortSignal;
  /** For POSTs that honour it; generated once per call otherwise, and reused by retries. */
  idempotencyKey?: string;
  headers?: Record<string, string>;
}

export interface RequestArgs {
  params?: Record<string, string>;
  query?: Record<string, unknown> | undefined;
  body?: unknown;
  /** A multipart body (uploads); no JSON then. */
  form?: FormData;
  /** Bytes sent as they are, with their content type (a raw email). */
  bytes?: { data: Uint8Array | string; contentType: string };
  /** Answer the raw Response (downloads). */
  raw?: boolean;
}

export interface ResponseInfo {
  response: Response;
  requestId: string | undefined;
  rateLimitRemaining: number | undefined;
}

const DEFAULT_BASE_URL = "http://localhost:3000/v1";
const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_RETRIES = 2;
const INITIAL_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 8_000;

function environmentVariable(name: string): string | undefined {
  const process = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return process?.env?.[name];
}

function randomKey(): string {
  return globalThis.crypto.randomUUID();
}

/** A thenable answer that can also show the HTTP response (request id, rate limit). */
export class APIPromise<T> implements PromiseLike<T> {
  constructor(private readonly result: Promise<{ data: T; info: ResponseInfo }>) {}

  // biome-ignore lint/suspicious/noThenProperty: awaitable by design, as a Promise is (await client.x.get(...)).
  then<A = T, B = never>(
    onfulfilled?: ((value: T) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.result.then(({ data }) => data).then(onfulfilled, onrejected);
  }

  catch<B = never>(onrejected: (reason: unknown) => B | PromiseLike<B>): Promise<T | B> {
    return this.then(undefined, onrejected);
  }

  /** The data with the response it came in: `requestId`, `rateLimitRemaining`, headers. */
  async withResponse(): Promise<{ data: T } & ResponseInfo> {
    const { data, info } = await this.result;
    return { data, ...info };
  }
}

/** The HTTP engine: authentication, retries with backoff and jitter, idempotency keys, errors. */
export class Transport {
  readonly baseUrl: string;
  private readonly apiKey: string;
  private readonly timeout: number;
  private readonly maxRetries: number;
  private readonly fetchImpl: typeof fetch;

  constructor(options: ClientOptions = {}) {
    const apiKey = options.apiKey ?? environmentVariable("PARLEY_API_KEY");
    if (!apiKey) throw new ParleyError("Give an apiKey, or set PARLEY_API_KEY.");
    this.apiKey = apiKey;
    this.baseUrl = (options.baseUrl ?? environmentVariable("PARLEY_BASE_URL") ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    this.timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;
    this.maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  request<T>(operation: Route, args: RequestArgs, options: RequestOptions = {}): APIPromise<T> {
    return new APIPromise(this.send<T>(operation, args, options));
  }

  private async send<T>(operation: Route, args: RequestArgs, options: RequestOptions) {
    const url = this.urlFor(operation, args);
    const idempotencyKey = operation.idempotent ? (options.idempotencyKey ?? randomKey()) : undefined;
    const maxRetries = options.maxRetries ?? this.maxRetries;
    for (let attempt = 0; ; attempt++) {
      let outcome: { response: Response } | { error: ParleyError };
      try {
        outcome = { response: await this.attempt(operation, url, args, options, idempotencyKey) };
      } catch (error) {
        outcome = {
          error: error instanceof ParleyError ? error : new ConnectionError("Could not reach Parley", { cause: error }),
        };
      }
      if ("response" in outcome && outcome.response.ok) return this.parse<T>(outcome.response, args);
      const failure =
        "response" in outcome ? await this.failure(outcome.response) : { error: outcome.error, retryAfter: undefined };
      if (attempt >= maxRetries || !isRetryable(failure.error) || options.signal?.aborted) throw failure.error;
      await sleep(backoffMs(attempt, failure.retryAfter), options.signal);
    }
  }

  private urlFor(operation: Route, args: RequestArgs): string {
    const path = operation.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = args.params?.[name];
      if (value === undefined || value === "") throw new ParleyError(`${name} is required`);
      return encodeURIComponent(value);
    });
    const url = new URL(this.baseUrl + path);
    for (const [name, value] of Object.entries(args.query ?? {})) {
      if (value === undefined || value === null) continue;
      url.searchParams.set(name, value instanceof Date ? value.toISOString() : String(value));
    }
    return url.toString();
  }

  private async attempt(
    operation: Route,
    url: string,
    args: RequestArgs,
    options: RequestOptions,
    idempotencyKey: string | undefined,
  ): Promise<Response> {
    const timeout = AbortSignal.timeout(options.timeout ?? this.timeout);
    const signal = options.signal ? anySignal([options.signal, timeout]) : timeout;
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.apiKey}`,
      accept: "application/json",
      ...(idempotencyKey ? { "idempotency-key": idempotencyKey } : {}),
      ...options.headers,
    };
    let body: FormData | string | Uint8Array | undefined;
    if (args.form) body = args.form;
    else if (args.bytes) {
      headers["content-type"] = args.bytes.contentType;
      body = args.bytes.data;
    } else if (args.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(args.body);
    }
    try {
      return await this.fetchImpl(url, { method: operation.method.toUpperCase(), headers, body, signal });
    } catch (error) {
      if (timeout.aborted && !options.signal?.aborted)
        throw new TimeoutError("Parley did not answer in time", { cause: error });
      throw new ConnectionError(options.signal?.aborted ? "The request was aborted" : "Could not reach Parley", {
        cause: error,
      });
    }
  }

  private async parse<T>(response: Response, args: RequestArgs) {
    const info = infoOf(response);
    if (args.raw) return { data: response as T, info };
    const text = await response.text();
    return { data: (text ? JSON.parse(text) : undefined) as T, info };
  }

  private async failure(response: Response) {
    const text = await response.text().catch(() => "");
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    const retryAfter = Number(response.headers.get("retry-after"));
    return {
      error: errorFromResponse(response.status, body, response.headers.get("x-parley-request-id") ?? undefined),
      retryAfter: Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter * 1000 : undefined,
    };
  }
}

function infoOf(response: Response): ResponseInfo {
  const remaining = response.headers.get("x-ratelimit-remaining");
  return {
    response,
    requestId: response.headers.get("x-parley-request-id") ?? undefined,
    rateLimitRemaining: remaining === null ? undefined : Number(remaining),
  };
}

/** Network errors, 408, 409 `idempotency_in_progress`, 429 and 5xx are worth another try. */
export function isRetryable(error: ParleyError): boolean {
  if (error.status === undefined) return error instanceof ConnectionError;
  if (error.status === 408 || error.status === 429 || error.status >= 500) return true;
  return error.status === 409 && error.code === "idempotency_in_progress";
}

/** Exponential backoff with full jitter; a `Retry-After` from the server wins. */
export function backoffMs(attempt: number, retryAfterMs: number | undefined): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, 60_000);
  const ceiling = Math.min(MAX_BACKOFF_MS, INITIAL_BACKOFF_MS * 2 ** attempt);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function anySignal(signals: AbortSignal[]): AbortSignal {
  const controller = new AbortController();
  for (const signal of signals) {
    if (signal.aborted) controller.abort(signal.reason);
    signal.addEventListener("abort", () => controller.abort(signal.reason), { once: true });
  }
  return controller.signal;
}
