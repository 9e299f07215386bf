import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { verifySignature } from "@parley/webhook-verify";

/** What the webhook receiver saw: each event id with its number of arrivals. */
export interface WebhookReceiver {
  url: string;
  /** Deliveries per event id (a count above 1 is a duplicate delivery). */
  arrivals: Map<string, number>;
  /** Deliveries whose signature did not verify: the event id (or the path) and why. */
  badSignatures: { eventId: string; reason: string }[];
  /** The secret of each endpoint path, set once the endpoint is created. */
  secrets: Map<string, string>;
  close(): Promise<void>;
}

/**
 * A fast receiver of Parley's signed webhooks, as a business's would be: each POST is
 * verified with `@parley/webhook-verify` against its endpoint's secret, then answered 200.
 */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const arrivals = new Map<string, number>();
  const badSignatures: { eventId: string; reason: string }[] = [];
  const secrets = new Map<string, string>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const secret = secrets.get(req.url ?? "");
      let eventId = `(unparsed, ${req.url})`;
      try {
        eventId = (JSON.parse(body.toString("utf8")) as { id: string }).id;
      } catch {}
      if (!secret) {
        badSignatures.push({ eventId, reason: `no endpoint at ${req.url}` });
        res.writeHead(404).end();
        return;
      }
      verifySignature(body, req.headers["x-parley-signature"] as string | undefined, secret).then(
        () => {
          arrivals.set(eventId, (arrivals.get(eventId) ?? 0) + 1);
          res.writeHead(200, { "content-type": "text/plain" }).end("ok");
        },
        (error: Error) => {
          badSignatures.push({ eventId, reason: error.message });
          res.writeHead(400).end();
        },
      );
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    arrivals,
    badSignatures,
    secrets,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
