import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";

/**
 * How long, and how much, a connection is read after an answer given before its request's
 * body was all read. The client is still sending: closed at once, its kernel receives data
 * for a socket that no longer exists and resets the connection, and a client still writing
 * (Node's `http`, undici's `fetch`) sees EPIPE or ECONNRESET, often before it has read the
 * answer. RFC 9112 §9.6: close the sending side, keep reading until the client closes or
 * the server is reasonably sure the answer arrived, then close.
 *
 * Bounded both ways, so a lingering connection is never a lever: the client reads the
 * answer within milliseconds of its arrival, so 5 s is ample; 64 MiB discards a whole
 * upload refused at 16 MB (and four times over), where a client sending more sees its
 * connection reset once it has long had the answer. The bytes are dropped as they arrive,
 * never held: a lingering connection costs a socket and the parsing of what it sends.
 */
export const LINGER_BOUNDS = { maxBytes: 64 * 1024 * 1024, maxMs: 5_000 };

export interface LingerBounds {
  maxBytes: number;
  maxMs: number;
}

/** The connection of an answer that says `Connection: close` (the error's headers, or a server closing). */
export function answerClosesConnection(res: ServerResponse): boolean {
  return /\bclose\b/i.test(String(res.getHeader("connection") ?? ""));
}

/**
 * Called just before an answer that closes the connection is written, when the request's
 * body is not all in: the rest of the body is read and dropped, the answer goes out and is
 * followed by the end of the sending side (FIN), and the socket is destroyed once the
 * body has ended and the answer is out, when the client closes, or at the first bound.
 *
 * Node closes the connection of a `Connection: close` answer by `socket.destroySoon()`:
 * end, then destroy as soon as the answer is flushed, unread bytes and all. On this
 * socket alone that becomes the end only; the destroy is decided here.
 */
export function lingerBeforeClose(
  req: IncomingMessage,
  res: ServerResponse,
  bounds: LingerBounds = LINGER_BOUNDS,
): void {
  if (req.complete) return;
  const socket: Socket & { destroySoon?: () => void } = req.socket;
  if (socket.destroyed) return;
  let discarded = 0;
  const close = () => {
    clearTimeout(timer);
    socket.destroy();
  };
  const timer = setTimeout(close, bounds.maxMs);
  socket.once("close", () => clearTimeout(timer));
  socket.destroySoon = () => socket.end();
  req.on("data", (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > bounds.maxBytes) close();
  });
  // The whole body is in: nothing unread remains, so the close resets nothing.
  req.once("end", () => {
    if (socket.writableFinished) close();
    else socket.once("finish", close);
  });
  // An error answer never reads the body again: `data` listeners alone would not start it.
  req.resume();
  res.once("close", () => {
    // The answer could not be written (the client went away): nothing to wait for.
    if (!res.writableFinished) close();
  });
}
