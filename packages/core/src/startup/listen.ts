import type http from "node:http";
import type { AddressInfo } from "node:net";

export interface ListeningServer {
  port: number;
  /** Stops accepting and drops the open connections (scrapes and probes are short: nothing to drain). */
  close(): Promise<void>;
}

/** Listens on `port` (0: a free one) and `host`; rejects with the listen error (EADDRINUSE...). */
export async function listenHttp(server: http.Server, port: number, host: string): Promise<ListeningServer> {
  server.listen(port, host);
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
