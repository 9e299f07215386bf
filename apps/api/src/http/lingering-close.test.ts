import { randomBytes } from "node:crypto";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { MAX_UPLOAD_BYTES } from "@parley/schema";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { multipartBody } from "../../test/files.js";
import { createTestOrganization, eventually, type TestOrganization, useTestApi } from "../../test/harness.js";
import { answerClosesConnection, type LingerBounds, lingerBeforeClose } from "./lingering-close.js";

const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "1000000" });

interface Outcome {
  status: number | undefined;
  body: string;
  /** The client's socket error (EPIPE, ECONNRESET), if it had one. */
  error: string | undefined;
}

/**
 * One request by Node's own `http` client, the whole body written at once with its
 * `Content-Length`, as a client that does not wait for an early answer sends it. Settles
 * when the request closes (its connection gone), so an error that follows the answer
 * (a 413, then EPIPE) is seen with it.
 */
function send(path: string, headers: Record<string, string>, body: Buffer): Promise<Outcome> {
  return new Promise((resolve) => {
    const url = new URL(`${api.baseUrl}${path}`);
    const outcome: Outcome = { status: undefined, body: "", error: undefined };
    const failed = (error: NodeJS.ErrnoException) => {
      outcome.error ??= error.code ?? error.message;
    };
    let answered = Promise.resolve();
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        agent: false,
        headers: { ...headers, "content-length": String(body.length) },
      },
      (res) => {
        outcome.status = res.statusCode;
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (outcome.body += chunk));
        res.on("error", failed);
        answered = new Promise((done) => res.once("close", done));
      },
    );
    req.on("error", failed);
    req.once("close", () => void answered.then(() => resolve(outcome)));
    req.end(body);
  });
}

/** What the client saw, in one line: `413 payload_too_large`, with the socket's error after it if it had one. */
function summary(outcome: Outcome): string {
  let code = "-";
  try {
    code = JSON.parse(outcome.body).error.code;
  } catch {
    // No answer, or a cut one: its status alone tells.
  }
  return [outcome.status ?? "no answer", code, outcome.error].filter(Boolean).join(" ");
}

/** How many times each racy case is sent: before the fix, four uploads in five saw EPIPE. */
const ROUNDS = 5;

describe("a body refused as too large before it is read", () => {
  let org: TestOrganization;
  beforeAll(async () => {
    org = await createTestOrganization(api);
  });

  it("answers a 17 MB upload with a 413 that Node's http client reads, with no EPIPE or ECONNRESET", async () => {
    const bytes = randomBytes(MAX_UPLOAD_BYTES + 1024 * 1024);
    const { body, contentType } = multipartBody('name="file"; filename="huge.pdf"', "application/pdf", bytes);
    const outcomes: Outcome[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      outcomes.push(await send("/uploads", { authorization: `Bearer ${org.test}`, "content-type": contentType }, body));
    }
    expect(outcomes.map(summary)).toEqual(Array(ROUNDS).fill("413 payload_too_large"));
  });

  it("answers a 17 MB JSON body with a 413 that Node's http client reads, with no EPIPE or ECONNRESET", async () => {
    const body = Buffer.from(JSON.stringify({ name: "Big", metadata: { blob: "x".repeat(17 * 1024 * 1024) } }));
    const outcomes: Outcome[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      outcomes.push(
        await send("/contacts", { authorization: `Bearer ${org.test}`, "content-type": "application/json" }, body),
      );
    }
    expect(outcomes.map(summary)).toEqual(Array(ROUNDS).fill("413 payload_too_large"));
  });
});

/**
 * A request whose head declares `Content-Length` and whose body is then sent by `feed`, on
 * a raw socket: what came back (the answer's text) and whether the server closed.
 */
function rawUpload(port: number, head: string) {
  // Half-open allowed: it goes on sending after the server's end, as a client that does not
  // read while it sends; Node's http and undici close their side when the server's end comes.
  const socket = net.connect({ port, host: "127.0.0.1", allowHalfOpen: true });
  const seen = { text: "", ended: false, closed: false, error: undefined as string | undefined };
  socket.setEncoding("latin1");
  socket.on("data", (chunk: string) => (seen.text += chunk));
  socket.on("end", () => (seen.ended = true));
  socket.on("close", () => (seen.closed = true));
  socket.on("error", (error: NodeJS.ErrnoException) => (seen.error ??= error.code ?? error.message));
  socket.write(head);
  return { socket, seen };
}

/** Writes `chunk` as fast as the connection takes it, until it fails; how many bytes were written. */
async function flood(socket: net.Socket, chunk: Buffer, atMost: number): Promise<number> {
  let written = 0;
  while (written < atMost && !socket.destroyed) {
    written += chunk.length;
    if (!socket.write(chunk)) {
      await new Promise<void>((resolve) => {
        socket.once("drain", resolve);
        socket.once("close", resolve);
      });
    }
  }
  return written;
}

describe("a body declared over the limit", () => {
  let org: TestOrganization;
  beforeAll(async () => {
    org = await createTestOrganization(api);
  });

  const port = () => Number(new URL(api.baseUrl).port);
  const head = (path: string, type: string, length: number) =>
    `POST /v1${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${org.test}\r\n` +
    `Content-Type: ${type}\r\nContent-Length: ${length}\r\n\r\n`;

  it.each([
    ["/uploads", "multipart/form-data; boundary=b"],
    ["/contacts", "application/json"],
  ])("is refused on POST %s with 413 before its body is sent, and the connection closes", async (path, type) => {
    const { socket, seen } = rawUpload(port(), head(path, type, 17 * 1024 * 1024));
    socket.write("{");
    const answered = await eventually(
      async () => seen,
      (now) => now.ended,
    );
    expect(answered.text).toMatch(/^HTTP\/1\.1 413 /);
    expect(answered.text).toMatch(/\r\nconnection: close\r\n/i);
    expect(answered.text).toContain('"code":"payload_too_large"');
    socket.destroy();
  });
});

describe("lingerBeforeClose", () => {
  /** A server that refuses every request at once, as the error handler does, with the given bounds. */
  const closes: { bytesRead: number; afterMs: number }[] = [];
  const bounds: LingerBounds = { maxBytes: 1024 * 1024, maxMs: 300 };
  const server = http.createServer((req, res) => {
    const answeredAt = performance.now();
    req.socket.once("close", () =>
      closes.push({ bytesRead: req.socket.bytesRead, afterMs: performance.now() - answeredAt }),
    );
    res.setHeader("Connection", "close");
    expect(answerClosesConnection(res)).toBe(true);
    lingerBeforeClose(req, res, bounds);
    res.writeHead(413, { "Content-Type": "text/plain", "Content-Length": "9" }).end("too large");
  });
  beforeAll(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve)));
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = () => (server.address() as AddressInfo).port;
  const head = (length: number) => `POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${length}\r\n\r\n`;

  it("reads and drops at most maxBytes of a body that keeps coming, then closes", async () => {
    closes.length = 0;
    const { socket, seen } = rawUpload(port(), head(1024 * 1024 * 1024));
    const written = await flood(socket, Buffer.alloc(64 * 1024), 1024 * 1024 * 1024);
    await eventually(
      async () => closes.length,
      (count) => count === 1,
    );
    expect(seen.text).toMatch(/^HTTP\/1\.1 413 /);
    // One read past the bound at most: the parser hands the body over in reads of up to 64 KiB.
    expect(closes[0]?.bytesRead).toBeGreaterThan(bounds.maxBytes);
    expect(closes[0]?.bytesRead).toBeLessThan(bounds.maxBytes + 128 * 1024);
    expect(written).toBeLessThan(1024 * 1024 * 1024);
  });

  it("closes a connection whose body stops coming after maxMs", async () => {
    closes.length = 0;
    const { socket, seen } = rawUpload(port(), head(1024));
    socket.write("x".repeat(10));
    await eventually(
      async () => closes.length,
      (count) => count === 1,
    );
    expect(seen.text).toMatch(/^HTTP\/1\.1 413 /);
    expect(closes[0]?.afterMs).toBeGreaterThanOrEqual(bounds.maxMs - 5);
    expect(closes[0]?.afterMs).toBeLessThan(bounds.maxMs + 2_000);
    socket.destroy();
  });

  it("closes as soon as the whole body is in, with no reset", async () => {
    closes.length = 0;
    const { socket, seen } = rawUpload(port(), head(100_000));
    await flood(socket, Buffer.alloc(10_000), 100_000);
    await eventually(
      async () => closes.length,
      (count) => count === 1,
    );
    expect(closes[0]?.afterMs).toBeLessThan(bounds.maxMs);
    await eventually(
      async () => seen,
      (now) => now.ended,
    );
    expect(seen.text).toMatch(/^HTTP\/1\.1 413 [\s\S]*\r\n\r\ntoo large$/);
    expect(seen.error).toBeUndefined();
    socket.end();
  });
});
