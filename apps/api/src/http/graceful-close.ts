import type { Server, ServerResponse } from "node:http";
import { InFlightList } from "./in-flight-list.js";

/**
 * How the API's server closes: it stops accepting connections at once and lets every
 * request in flight finish with its real answer. Node's `server.close()` then waits for
 * every connection to end, and a keep-alive connection whose last answer went out stays
 * open until `keepAliveTimeout`: answers given while closing say `Connection: close`, and
 * connections that fall idle are closed as soon as they do.
 */
export function gracefulCloser(server: Server): () => Promise<void> {
  let closing = false;
  // Not a Set: one added and removed per request (in-flight-list.ts says what a Set costs).
  const inFlight = new InFlightList<ServerResponse>();
  server.on("request", (_req, res: ServerResponse) => {
    if (closing) res.setHeader("connection", "close");
    const entry = inFlight.add(res);
    res.once("close", () => {
      inFlight.remove(entry);
      if (closing) setImmediate(() => server.closeIdleConnections());
    });
  });
  return () => {
    closing = true;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    inFlight.forEach((res) => {
      if (!res.headersSent) res.setHeader("connection", "close");
    });
    return closed;
  };
}
