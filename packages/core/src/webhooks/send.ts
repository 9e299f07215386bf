import { lookup as dnsLookup } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import { Agent, request } from "undici";
import { assertPublicHost, ForbiddenAddressError, isForbiddenAddress } from "./address-policy.js";

export const WEBHOOK_TIMEOUT_MS = 10_000;
const EXCERPT_LIMIT = 1024;

export interface WebhookRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
}

export interface WebhookResponse {
  succeeded: boolean;
  status: number | null;
  durationMs: number;
  excerpt: string | null;
  error: string | null;
}

export interface WebhookSenderOptions {
  /** Production refuses loopback, private, link-local and metadata addresses, checked at connect time. */
  blockPrivateAddresses: boolean;
  timeoutMs?: number;
}

/** Refuses forbidden addresses at the moment of connecting: DNS may have changed since creation. */
const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, "", 0);
    const list = Array.isArray(addresses) ? addresses : [];
    const blocked = list.find((entry) => isForbiddenAddress(entry.address));
    if (blocked || list.length === 0) {
      return callback(new ForbiddenAddressError(`${hostname} resolves to a non-public address`), "", 0);
    }
    if (options.all) return (callback as unknown as (e: null, a: typeof list) => void)(null, list);
    const first = list[0];
    return callback(null, first?.address ?? "", first?.family ?? 4);
  });
};

/**
 * Posts webhooks over pooled keep-alive connections (undici). Any 2xx is success;
 * everything else, redirects included (never followed), is a failure; the answer is
 * awaited at most 10 seconds.
 */
export class WebhookSender {
  private readonly agent: Agent;
  private readonly timeoutMs: number;

  constructor(private readonly options: WebhookSenderOptions) {
    this.timeoutMs = options.timeoutMs ?? WEBHOOK_TIMEOUT_MS;
    this.agent = new Agent({
      connections: 16,
      keepAliveTimeout: 30_000,
      connect: options.blockPrivateAddresses
        ? { lookup: guardedLookup, timeout: this.timeoutMs }
        : { timeout: this.timeoutMs },
    });
  }

  async send(webhook: WebhookRequest): Promise<WebhookResponse> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    try {
      if (this.options.blockPrivateAddresses) await assertAllowedLiteral(webhook.url);
      const response = await request(webhook.url, {
        method: "POST",
        body: webhook.body,
        headers: webhook.headers,
        dispatcher: this.agent,
        signal: AbortSignal.timeout(this.timeoutMs),
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
      const excerpt = await readExcerpt(response.body);
      const succeeded = response.statusCode >= 200 && response.statusCode < 300;
      return {
        succeeded,
        status: response.statusCode,
        durationMs: elapsed(),
        excerpt,
        error: succeeded ? null : `The endpoint answered ${response.statusCode}`,
      };
    } catch (error) {
      return { succeeded: false, status: null, durationMs: elapsed(), excerpt: null, error: describe(error) };
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

/** A literal IP in the URL never goes through DNS: check it directly. */
async function assertAllowedLiteral(url: string) {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
  if (isIP(host)) await assertPublicHost(host);
}

async function readExcerpt(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= EXCERPT_LIMIT) break;
  }
  body.destroy();
  if (size === 0) return null;
  return Buffer.concat(chunks).subarray(0, EXCERPT_LIMIT).toString("utf8");
}

function describe(error: unknown): string {
  if (error instanceof ForbiddenAddressError) return `Refused: ${error.message}`;
  if (error instanceof Error) {
    if (error.name === "TimeoutError" || error.name === "AbortError" || /timeout/i.test(error.name)) {
      return "Timed out waiting for the endpoint's answer";
    }
    const cause = (error as { cause?: unknown }).cause;
    if (cause instanceof ForbiddenAddressError) return `Refused: ${cause.message}`;
    const code = (error as { code?: string }).code ?? (cause as { code?: string } | undefined)?.code;
    return code ? `Connection failed (${code})` : `Connection failed: ${error.message}`;
  }
  return "Connection failed";
}
