import type { Server, ServerResponse } from "node:http";

/**
 * How the API's server closes: it stops accepting connections at once and lets every
 * request in flight finish with its real answer. Node's `server.close()` then waits for
 * every connection to end, and a keep-alive connection whose last answer went out stays
 * open until `keepAliveTimeout`: answers given while closing say `Connection: close`, and
 * connections that fall idle are closed as soon as they do.
 */
export function gracefulCloser(server: Server): () => Promise<void> {
  let closing = false;
  const inFlight = new Set<ServerResponse>();
  server.on("request", (_req, res: ServerResponse) => {
    if (closing) res.setHeader("connection", "close");
    inFlight.add(res);
    res.once("close", () => {
      inFlight.delete(res);
      if (closing) setImmediate(() => server.closeIdleConnections());
    });
  });
  return () => {
    closing = true;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const res of inFlight) if (!res.headersSent) res.setHeader("connection", "close");
    return closed;
  };
}
