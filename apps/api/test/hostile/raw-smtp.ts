import net from "node:net";
import { expect } from "vitest";

/** A raw SMTP client: replies read one at a time (a reply's code), the socket's close awaited. */
export class RawSmtp {
  readonly socket: net.Socket;
  readonly closed: Promise<void>;
  private buffer = "";
  private readonly codes: number[] = [];
  private readonly waiting: ((code: number) => void)[] = [];

  constructor(port: number, localAddress?: string) {
    this.socket = net.connect({ port, host: "127.0.0.1", ...(localAddress ? { localAddress } : {}) });
    this.socket.setEncoding("utf8");
    this.socket.on("data", (chunk: string) => {
      this.buffer += chunk;
      for (;;) {
        const match = this.buffer.match(/^(?:\d{3}-[^\n]*\n)*(\d{3})(?: [^\n]*)?\r?\n/);
        if (!match) return;
        this.buffer = this.buffer.slice(match[0].length);
        const code = Number(match[1]);
        const waiter = this.waiting.shift();
        if (waiter) waiter(code);
        else this.codes.push(code);
      }
    });
    this.socket.on("error", () => {});
    this.closed = new Promise((resolve) => this.socket.once("close", () => resolve()));
  }

  /** The next reply's code; 0 when the connection closed without one. */
  reply(): Promise<number> {
    const queued = this.codes.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    return Promise.race([new Promise<number>((resolve) => this.waiting.push(resolve)), this.closed.then(() => 0)]);
  }

  async command(line: string): Promise<number> {
    this.socket.write(`${line}\r\n`);
    return this.reply();
  }

  /** Writes `chunk` until `total` bytes went out, waiting for the socket to drain. */
  async stream(chunk: Buffer, total: number): Promise<void> {
    for (let sent = 0; sent < total; sent += chunk.length) {
      if (!this.socket.write(chunk)) await new Promise((resolve) => this.socket.once("drain", resolve));
    }
  }

  end() {
    this.socket.destroy();
  }
}

/**
 * A message of `total` bytes of body sent to `recipient` without `SIZE=`, as one DATA;
 * resolves with the reply to its final dot. `beforeData` runs once the recipient is
 * accepted, just before DATA.
 */
export async function sendWithoutSize(
  port: number,
  recipient: string,
  total: number,
  beforeData: () => void = () => {},
): Promise<number> {
  // 64 KiB of 1,000-byte lines, written again and again: the sender allocates nothing per chunk.
  const chunk = Buffer.from(`${"x".repeat(998)}\r\n`.repeat(64));
  const client = new RawSmtp(port);
  try {
    expect(await client.reply()).toBe(220);
    expect(await client.command("EHLO sender.example")).toBe(250);
    expect(await client.command("MAIL FROM:<attacker@evil.example>")).toBe(250);
    expect(await client.command(`RCPT TO:<${recipient}>`)).toBe(250);
    beforeData();
    expect(await client.command("DATA")).toBe(354);
    client.socket.write("From: attacker@evil.example\r\nSubject: big\r\nMessage-ID: <big@evil.example>\r\n\r\n");
    await client.stream(chunk, total);
    const code = await client.command("\r\n.");
    // The session goes on: the next transaction is served.
    expect(await client.command("RSET")).toBe(250);
    expect(await client.command("QUIT")).toBe(221);
    return code;
  } finally {
    client.end();
  }
}
