import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll } from "vitest";
import { eventually } from "./harness.js";

/** One POST as the receiver saw it: the raw body, exactly as signed. */
export interface ReceivedWebhook {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The body parsed: the event envelope. */
  envelope: Record<string, any>;
  /** `Date.now()` when the whole body had arrived. */
  receivedAt: number;
}

/** How to answer: a status (with a body and headers), or `hold` to keep the request open and never answer. */
export type Reply = { status: number; body?: string; headers?: Record<string, string> } | "hold";

/** Chooses the answer to the `index`-th (0-based) request of one endpoint. */
export type Responder = (request: ReceivedWebhook, index: number) => Reply;

export interface ReceiverEndpoint {
  url: string;
  path: string;
  /** Every request to this endpoint's path, in order of arrival. */
  received: ReceivedWebhook[];
}

export interface WebhookReceiver {
  /** A new path of the receiver, answering with `responder` (200 "ok" by default). */
  endpoint(responder?: Responder): ReceiverEndpoint;
  /** Requests to paths no endpoint was made for (where a followed redirect would land). */
  strays: ReceivedWebhook[];
}

export const answer =
  (status: number, body = ""): Responder =>
  () => ({ status, body });

/**
 * A real HTTP receiver on 127.0.0.1 for this test file: every endpoint is a path of its
 * own with its own answers, so tests never see each other's requests.
 */
export function useWebhookReceiver(): WebhookReceiver {
  const endpoints = new Map<string, { endpoint: ReceiverEndpoint; responder: Responder }>();
  const strays: ReceivedWebhook[] = [];
  let baseUrl = "";
  let count = 0;

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const received: ReceivedWebhook = {
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        body,
        envelope: parse(body),
        receivedAt: Date.now(),
      };
      const target = endpoints.get(received.path);
      if (!target) {
        strays.push(received);
        res.writeHead(404).end();
        return;
      }
      target.endpoint.received.push(received);
      reply(res, target.responder(received, target.endpoint.received.length - 1));
    });
  });

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    // Held requests never end by themselves.
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  return {
    strays,
    endpoint(responder = answer(200, "ok")) {
      count += 1;
      const path = `/hooks/${count}`;
      const endpoint: ReceiverEndpoint = { url: `${baseUrl}${path}`, path, received: [] };
      endpoints.set(path, { endpoint, responder });
      return endpoint;
    },
  };
}

function parse(body: string): Record<string, any> {
  try {
    return JSON.parse(body);
  } catch {
    return {};
  }
}

function reply(res: ServerResponse, choice: Reply) {
  if (choice === "hold") return;
  res.writeHead(choice.status, { "content-type": "text/plain", ...choice.headers }).end(choice.body ?? "");
}

/** One header of a received request, as a single string ("" when absent). */
export function header(request: ReceivedWebhook, name: string): string {
  const value = request.headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(",") : (value ?? "");
}

/** Waits until the endpoint has received at least `count` requests; returns them all. */
export async function waitForRequests(endpoint: ReceiverEndpoint, count = 1, timeoutMs = 10_000) {
  return eventually(
    async () => [...endpoint.received],
    (received) => received.length >= count,
    timeoutMs,
  );
}
