import http from "node:http";
import type { Socket } from "node:net";
import type { Express } from "express";

/**
 * An HTTP server for an express app whose requests and responses are made with the app's
 * prototypes (`app.request`, `app.response`) from the start, rather than Node's.
 *
 * Express gives each request and response its prototypes as it begins to handle them
 * (`Object.setPrototypeOf` in `app.handle`), and after that change V8 kept what each
 * request allocated alive through a young-generation collection and promoted it: on a
 * bare express route, one connection, about 2.4 MB promoted per scavenge against none for
 * the same route on plain `node:http`. Collected again by mark-compacts, that cost Parley's
 * API a mark-compact every quarter of a second under a page load and scavenges of 6 ms.
 * Made with the app's prototypes, express finds them in place and changes nothing: CPU per
 * request 20 to 32 % lower on pages and sends (bench/notebook.md, "2026-11-29, afternoon").
 */
export function createExpressServer(app: Express, options: http.ServerOptions = {}): http.Server {
  return http.createServer({ ...options, ...expressMessageClasses(app) }, app);
}

function expressMessageClasses(app: Express): Pick<http.ServerOptions, "IncomingMessage" | "ServerResponse"> {
  // Constructor functions, not classes: a class's prototype cannot be replaced, and the
  // instances' prototype must be express's own object for its Object.setPrototypeOf to find it.
  function ExpressRequest(this: http.IncomingMessage, socket: Socket) {
    http.IncomingMessage.call(this, socket);
  }
  ExpressRequest.prototype = app.request;
  function ExpressResponse(this: http.ServerResponse, req: http.IncomingMessage, options?: object) {
    // Node passes the server's options (highWaterMark and the like) beside the request.
    (http.ServerResponse as unknown as (req: http.IncomingMessage, options?: object) => void).call(this, req, options);
  }
  ExpressResponse.prototype = app.response;
  return {
    IncomingMessage: ExpressRequest as unknown as typeof http.IncomingMessage,
    ServerResponse: ExpressResponse as unknown as typeof http.ServerResponse,
  };
}
