import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import nodemailer from "nodemailer";
import { SMTPServer, type SMTPServerDataStream } from "smtp-server";

/** One message as the sink received it. */
export interface ReceivedEmail {
  envelope: { from: string; to: string[] };
  raw: Buffer;
}

/** A scripted refusal: the SMTP reply code and text, at RCPT TO or after DATA. */
export interface SmtpRefusal {
  code: number;
  text: string;
  stage?: "rcpt" | "data";
}

export interface SmtpSinkOptions {
  /** Refuse every message so (a relay that is down for good, or always deferring). */
  failWith?: SmtpRefusal;
  /** Refuse every login so (a relay whose credentials were changed: `535`, or `454` for now). */
  refuseLogins?: Omit<SmtpRefusal, "stage">;
}

export interface SmtpSink {
  /** `smtp://user:pass@127.0.0.1:<port>`: any credentials are accepted, none are required. */
  url: string;
  host: string;
  port: number;
  messages: ReceivedEmail[];
  /** Usernames of the AUTH commands, in order: shows that the URL's credentials were used. */
  logins: string[];
  /** TCP connections accepted so far: shows whether a client reuses its connection. */
  connections: number;
  /** Resolves once `count` messages arrived; rejects after `timeoutMs`. */
  waitForMessages(count: number, timeoutMs?: number): Promise<ReceivedEmail[]>;
  /** Refuses the next message only, with this reply (at DATA unless `stage` says otherwise). */
  rejectNext(code: number, text: string, stage?: SmtpRefusal["stage"]): void;
  close(): Promise<void>;
}

/**
 * A local SMTP server standing in for a relay (outbound) or a mail host (inbound): plain
 * text, no STARTTLS, AUTH PLAIN/LOGIN offered but optional. Tests only.
 */
export async function startSmtpSink(options: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const messages: ReceivedEmail[] = [];
  const logins: string[] = [];
  let next: SmtpRefusal | undefined;
  let connections = 0;
  const refusal = (stage: "rcpt" | "data"): SmtpRefusal | undefined => {
    const pending = next ?? options.failWith;
    if (!pending || (pending.stage ?? "data") !== stage) return undefined;
    if (pending === next) next = undefined;
    return pending;
  };

  const server = new SMTPServer({
    authOptional: true,
    allowInsecureAuth: true,
    authMethods: ["PLAIN", "LOGIN"],
    disabledCommands: ["STARTTLS"],
    disableReverseLookup: true,
    logger: false,
    // A client's pooled connection would otherwise hold close() for 30 seconds.
    closeTimeout: 200,
    onConnect(_session, callback) {
      connections += 1;
      callback();
    },
    onAuth(auth, _session, callback) {
      logins.push(auth.username ?? "");
      if (options.refuseLogins) return callback(smtpError(options.refuseLogins));
      callback(null, { user: auth.username ?? "anonymous" });
    },
    onRcptTo(_address, _session, callback) {
      const refused = refusal("rcpt");
      callback(refused ? smtpError(refused) : null);
    },
    onData(stream, session, callback) {
      readAll(stream).then((raw) => {
        const refused = refusal("data");
        if (refused) return callback(smtpError(refused));
        const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : "";
        messages.push({ envelope: { from, to: session.envelope.rcptTo.map((rcpt) => rcpt.address) }, raw });
        callback();
      }, callback);
    },
  });

  // A client that goes away mid-session (a worker killed by the soak) resets its socket:
  // smtp-server emits that as an 'error', which would end the process with no listener.
  server.on("error", () => {});
  await new Promise<void>((resolve, reject) => {
    server.server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.server.address() as AddressInfo;

  return {
    url: `smtp://user:pass@127.0.0.1:${port}`,
    host: "127.0.0.1",
    port,
    messages,
    logins,
    get connections() {
      return connections;
    },
    async waitForMessages(count, timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs;
      while (messages.length < count) {
        if (Date.now() > deadline) {
          throw new Error(`SMTP sink: expected ${count} message(s) within ${timeoutMs} ms, got ${messages.length}`);
        }
        await sleep(10);
      }
      return messages.slice(0, count);
    },
    rejectNext(code, text, stage = "data") {
      next = { code, text, stage };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * Delivers a prepared message as is (its own headers, the given envelope): how a test
 * plays a customer's mail client replying into an inbound SMTP server.
 */
export async function sendRawEmail(
  target: string | { host: string; port: number },
  message: { from: string; to: string | string[]; raw: Buffer | string },
): Promise<void> {
  const transport = nodemailer.createTransport(
    typeof target === "string" ? target : { host: target.host, port: target.port, secure: false, ignoreTLS: true },
  );
  try {
    await transport.sendMail({ envelope: { from: message.from, to: message.to }, raw: message.raw });
  } finally {
    transport.close();
  }
}

function smtpError(refusal: Omit<SmtpRefusal, "stage">): Error & { responseCode: number } {
  return Object.assign(new Error(refusal.text), { responseCode: refusal.code });
}

async function readAll(stream: SMTPServerDataStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
