import { isIPv6 } from "node:net";
import type { Request, Response } from "express";
import type { AppContext } from "../context.js";
import { countRequests, currentWindow, rateLimited, setRateLimitHeaders } from "../http/rate-limit.js";

/** The visitor API's allowances, per minute, and its tokens' lifetime (README, Configuration). */
export interface WebchatLimits {
  sessionsPerAddress: number;
  sessionsPerChannel: number;
  messagesPerAddress: number;
  messagesPerChannel: number;
  /** A visitor token unused for this many days has expired. */
  sessionIdleDays: number;
}

interface Allowance {
  bucket: string;
  limit: number;
  /** For the message of the 429: "10 sessions per minute per address". */
  what: string;
}

/**
 * The address a visitor is counted by: the connection's peer (Parley trusts no
 * forwarding header), an IPv4-mapped IPv6 address as its IPv4, any other IPv6 address by
 * its /64, which one host usually holds whole and can walk through at will.
 */
export function sourceAddress(req: Request): string {
  return addressKey(req.socket.remoteAddress ?? "unknown");
}

export function addressKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return mapped;
  if (!isIPv6(address)) return address;
  return `${expandIPv6(address).slice(0, 4).join(":")}::/64`;
}

function expandIPv6(address: string): string[] {
  const [head = "", tail] = address.split("%")[0]?.split("::") ?? [""];
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const zeros = tail === undefined ? [] : Array(8 - left.length - right.length).fill("0");
  return [...left, ...zeros, ...right].map((group) => group.toLowerCase().replace(/^0+(?=.)/, ""));
}

/**
 * Counts the request against each allowance (one statement) and refuses it with 429
 * `rate_limited` and `Retry-After` when any is spent; the `X-RateLimit-*` headers report
 * the tightest. Refused requests count too, as in the API.
 */
async function enforce(app: AppContext, res: Response, allowances: Allowance[]): Promise<void> {
  const window = currentWindow();
  const counts = await countRequests(
    app.db,
    allowances.map((allowance) => allowance.bucket),
    window,
  );
  let tightest = { limit: Number.POSITIVE_INFINITY, remaining: Number.POSITIVE_INFINITY };
  let exceeded: Allowance | undefined;
  allowances.forEach((allowance, index) => {
    const count = counts[index] ?? 0;
    const remaining = allowance.limit - count;
    if (remaining < tightest.remaining) tightest = { limit: allowance.limit, remaining };
    if (count > allowance.limit) exceeded ??= allowance;
  });
  setRateLimitHeaders(res, tightest.limit, tightest.remaining, window.resetSeconds);
  if (exceeded) {
    app.logger.info({ bucket: exceeded.bucket }, "web chat visitor rate limited");
    throw rateLimited(exceeded.what, window);
  }
}

/** Before a session is created: the source address's allowance (the channel is not known to exist yet). */
export function limitSessionsByAddress(app: AppContext, req: Request, res: Response): Promise<void> {
  const limit = app.webchatLimits.sessionsPerAddress;
  return enforce(app, res, [
    {
      bucket: `webchat:session:address:${sourceAddress(req)}`,
      limit,
      what: `${limit} sessions per minute per address`,
    },
  ]);
}

/** Once the channel is known to be a web chat: its own allowance of new sessions. */
export function limitSessionsByChannel(app: AppContext, res: Response, channelId: string): Promise<void> {
  const limit = app.webchatLimits.sessionsPerChannel;
  return enforce(app, res, [
    { bucket: `webchat:session:channel:${channelId}`, limit, what: `${limit} sessions per minute per channel` },
  ]);
}

/** A visitor's message: counted for the source address and for the session's channel. */
export function limitMessages(app: AppContext, req: Request, res: Response, channelId: string): Promise<void> {
  const { messagesPerAddress, messagesPerChannel } = app.webchatLimits;
  return enforce(app, res, [
    {
      bucket: `webchat:message:address:${sourceAddress(req)}`,
      limit: messagesPerAddress,
      what: `${messagesPerAddress} messages per minute per address`,
    },
    {
      bucket: `webchat:message:channel:${channelId}`,
      limit: messagesPerChannel,
      what: `${messagesPerChannel} messages per minute per channel`,
    },
  ]);
}
