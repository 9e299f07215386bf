import { generateKeyPairSync, randomBytes } from "node:crypto";
import net from "node:net";
import { parseInboundEmail } from "@parley/channels";
import { type ReceivedEmail, type SmtpSink, sendRawEmail, startSmtpSink } from "@parley/channels/testing";
import { dkimSign } from "mailauth/lib/dkim/sign.js";
import { afterAll, beforeAll, expect } from "vitest";
import { connectChannel } from "../src/channels/service.js";
import { type Client, eventually, type TestApi, type TestWorker } from "./harness.js";

/**
 * The email side of email-channel.test.ts: the SMTP sink standing in for the business's
 * outbound relay, hand-written RFC 5322 messages as a customer's mail client sends them,
 * and reads of what Parley stored.
 */

export interface SinkHandle {
  sink: SmtpSink;
}

/**
 * Starts the outbound relay (an SMTP sink) for the file. Register it before `useTestWorker`:
 * its `afterAll` then runs after the worker's, so the worker stops before the sink closes.
 */
export function useSmtpSink(): SinkHandle {
  const handle = {} as SinkHandle;
  beforeAll(async () => {
    handle.sink = await startSmtpSink();
  });
  afterAll(() => handle.sink?.close());
  return handle;
}

/** A live email channel on the sink, as `pnpm admin connect-channel` connects it. */
export async function connectEmailChannel(api: TestApi, organizationId: string, address: string, smtpUrl: string) {
  return connectChannel(api.context.db, api.context.secretBox, {
    organizationId,
    environment: "live",
    type: "email",
    name: "Support mailbox",
    provider: "smtp",
    settings: { address, smtp_url: smtpUrl, from_name: "Acme Support" },
  });
}

/** A Message-ID as a mail client makes them: unique per call. */
export function newMessageId(domain = "mail.example.com"): string {
  return `<${randomBytes(8).toString("hex")}@${domain}>`;
}

/** An address unique to one test, so that the tests of the file do not thread into each other. */
export function customerAddress(name: string): string {
  return `${name}.${randomBytes(4).toString("hex")}@example.com`;
}

export interface MailAttachment {
  filename: string;
  contentType: string;
  content: Buffer;
}

export interface RawMail {
  /** The From header as written: `"Name" <address>` or a bare address; omitted when null. */
  from: string | null;
  to: string;
  subject: string;
  messageId: string;
  text: string;
  inReplyTo?: string;
  references?: string[];
  attachments?: MailAttachment[];
}

/** An RFC 5322 message with CRLF line ends: text/plain, or multipart/mixed with base64 attachments. */
export function rawEmail(mail: RawMail): string {
  const headers = [
    ...(mail.from === null ? [] : [`From: ${mail.from}`]),
    `To: ${mail.to}`,
    `Subject: ${mail.subject}`,
    "Date: Tue, 03 Jun 2025 09:30:00 +0000",
    `Message-ID: ${mail.messageId}`,
    ...(mail.inReplyTo ? [`In-Reply-To: ${mail.inReplyTo}`] : []),
    ...(mail.references ? [`References: ${mail.references.join("\r\n ")}`] : []),
    "MIME-Version: 1.0",
  ];
  const text = mail.text.replace(/\r?\n/g, "\r\n");
  if (!mail.attachments?.length) {
    return [
      ...headers,
      "Content-Type: text/plain; charset=utf-8",
      "Content-Transfer-Encoding: 8bit",
      "",
      text,
      "",
    ].join("\r\n");
  }
  const boundary = `----=_Part_${randomBytes(6).toString("hex")}`;
  const parts = [
    [`--${boundary}`, "Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: 8bit", "", text],
    ...mail.attachments.map((attachment) => [
      `--${boundary}`,
      `Content-Type: ${attachment.contentType}; name="${attachment.filename}"`,
      `Content-Disposition: attachment; filename="${attachment.filename}"`,
      "Content-Transfer-Encoding: base64",
      "",
      ...(attachment.content.toString("base64").match(/.{1,76}/g) ?? []),
    ]),
  ];
  return [
    ...headers,
    `Content-Type: multipart/mixed; boundary="${boundary}"`,
    "",
    "This is a multi-part message in MIME format.",
    ...parts.flat(),
    `--${boundary}--`,
    "",
  ].join("\r\n");
}

/** Delivers a message to the worker's inbound SMTP server, as the customer's mail server would. */
export async function deliverOverSmtp(worker: TestWorker, envelope: { from: string; to: string }, raw: string) {
  const port = worker.worker.smtpPort;
  if (port === undefined) throw new Error("the worker runs no inbound SMTP server");
  await sendRawEmail({ host: "127.0.0.1", port }, { ...envelope, raw });
}

export interface StoredMessageRow {
  id: string;
  conversation_id: string;
  direction: string;
  provider_message_id: string | null;
}

/** The messages stored under a provider id (a Message-ID), straight from the database. */
export async function messagesWithProviderId(api: TestApi, providerMessageId: string): Promise<StoredMessageRow[]> {
  return api.client.sql<StoredMessageRow[]>`
    select id, conversation_id, direction, provider_message_id from messages
    where provider_message_id = ${providerMessageId} order by created_at, id`;
}

/** The inbound message stored for a Message-ID: exactly one. */
export async function onlyMessageWithProviderId(api: TestApi, providerMessageId: string): Promise<StoredMessageRow> {
  const rows = await messagesWithProviderId(api, providerMessageId);
  expect(rows, `messages stored for ${providerMessageId}`).toHaveLength(1);
  return rows[0] as StoredMessageRow;
}

/** A conversation's messages, oldest first (the API lists newest first). */
export async function conversationMessages(client: Client, conversationId: string): Promise<any[]> {
  const response = await client.get(`/conversations/${conversationId}/messages`, { query: { limit: 100 } });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return [...response.body.data].reverse();
}

/** Waits for the sink's mail to `recipient` (lower-case; the `count`-th one), and returns it parsed with the raw bytes. */
export async function mailTo(sink: SmtpSink, recipient: string, count = 1) {
  const received = await eventually(
    async () => sink.messages.filter((mail) => mail.envelope.to.some((to) => to.toLowerCase() === recipient)),
    (mails) => mails.length >= count,
  );
  const mail = received[count - 1] as ReceivedEmail;
  return { envelope: mail.envelope, raw: mail.raw, parsed: await parseInboundEmail(mail.raw) };
}

/** One header of a raw message, unfolded (the first occurrence), or undefined. */
export function headerOf(raw: Buffer, name: string): string | undefined {
  const head = raw.toString("utf8").split(/\r?\n\r?\n/)[0] ?? "";
  const unfolded = head.replace(/\r?\n[ \t]+/g, " ");
  const line = unfolded.split(/\r?\n/).find((entry) => entry.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line?.slice(name.length + 1).trim();
}

/**
 * A hand-driven SMTP session: each command sent once the previous reply is complete;
 * resolves with the reply codes, the greeting's first. A message body is sent as one
 * command ending in `\r\n.`. For what nodemailer never does (RSET mid-transaction).
 */
export async function smtpSession(port: number, commands: string[]): Promise<number[]> {
  const socket = net.connect(port, "127.0.0.1");
  socket.setEncoding("utf8");
  let buffer = "";
  const waiting: ((code: number) => void)[] = [];
  const codes: number[] = [];
  socket.on("data", (chunk: string) => {
    buffer += chunk;
    for (;;) {
      // A reply ends with a line whose code is followed by a space (not "250-").
      const match = buffer.match(/^(?:\d{3}-[^\n]*\n)*(\d{3})(?: [^\n]*)?\r?\n/);
      if (!match) return;
      buffer = buffer.slice(match[0].length);
      const code = Number(match[1]);
      codes.push(code);
      waiting.shift()?.(code);
    }
  });
  const reply = () =>
    new Promise<number>((resolve, reject) => {
      waiting.push(resolve);
      socket.once("error", reject);
    });
  try {
    await reply();
    for (const command of commands) {
      const next = reply();
      socket.write(`${command}\r\n`);
      await next;
    }
    return codes;
  } finally {
    socket.end();
  }
}

/** DNS records by `TYPE name`, for `fakeDns`. */
export type DnsRecords = Record<string, string[][]>;

/** The DKIM key of `example.com` (selector `test`), published by `fakeDns`. */
const dkimKey = generateKeyPairSync("rsa", { modulusLength: 2048 });
const dkimPublicKey = dkimKey.publicKey.export({ type: "spki", format: "der" }).toString("base64");

/** The DKIM record publishing a public key, as a domain's `<selector>._domainkey` TXT record. */
export function dkimRecord(publicKey: string): string[][] {
  return [[`v=DKIM1; k=rsa; p=${publicKey}`]];
}

/**
 * A DNS resolver for mailauth that answers from `records` and says NXDOMAIN otherwise: the
 * tests never reach the network. `example.com` (every `customerAddress`) lets 127.0.0.1
 * send (SPF), publishes a DKIM key (`dkimSigned`) and a DMARC policy: its mail passes DMARC
 * over SMTP, and signed over HTTP.
 */
export function fakeDns(records: DnsRecords = {}) {
  const all: DnsRecords = {
    "TXT example.com": [["v=spf1 ip4:127.0.0.1 -all"]],
    "TXT _dmarc.example.com": [["v=DMARC1; p=reject"]],
    "TXT test._domainkey.example.com": dkimRecord(dkimPublicKey),
    ...records,
  };
  return async (name: string, type: string): Promise<string[][]> => {
    const answer = all[`${type} ${name.toLowerCase()}`];
    if (answer) return answer;
    throw Object.assign(new Error(`query${type} ENOTFOUND ${name}`), { code: "ENOTFOUND" });
  };
}

/** `raw` with a DKIM signature of `domain` (by default example.com's key, selector `test`) on top. */
export async function dkimSigned(
  raw: string,
  signer: { domain: string; selector: string; privateKey: string } = {
    domain: "example.com",
    selector: "test",
    privateKey: dkimKey.privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  },
): Promise<string> {
  // mailauth reads `signatureData` (its README); its type declaration asks for the fields flat.
  const options = {
    signatureData: [{ signingDomain: signer.domain, selector: signer.selector, privateKey: signer.privateKey }],
  } as unknown as Parameters<typeof dkimSign>[1];
  const result = await dkimSign(raw, options);
  if (result.errors.length > 0) throw new Error(`DKIM signing failed: ${JSON.stringify(result.errors)}`);
  return result.signatures + raw;
}
