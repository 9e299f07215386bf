import { hostOf, withSpan } from "@parley/tracing";
import nodemailer, { type NodemailerError, type SendMailOptions } from "nodemailer";
import { type ChannelAdapter, type OutboundMessage, type SendResult, TemporaryChannelError } from "../adapter.js";
import { type EmailSettings, emailSettings } from "../settings.js";

export interface SmtpOptions {
  /** Connecting, the greeting and each reply: past it the attempt is a temporary fault. */
  timeoutMs: number;
}

const DEFAULT_OPTIONS: SmtpOptions = { timeoutMs: 30_000 };

/** References lists the thread's ancestors; past a few dozen, relays and clients truncate or refuse the header. */
const MAX_REFERENCES = 20;

/** One pool per relay; a worker serves few email channels, so the oldest is dropped past this. */
const MAX_TRANSPORTS = 50;

/**
 * Socket-level faults (`originalCode` keeps Node's code under nodemailer's): the relay may
 * answer on a later attempt.
 */
const TRANSIENT_CODES = new Set([
  "ECONNECTION",
  "ETIMEDOUT",
  "ESOCKET",
  "EDNS",
  "ETLS",
  "EPROXY",
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
]);

/** Faults of the channel's settings that no retry fixes. */
const MISCONFIGURED_CODES = new Set(["EAUTH", "ENOAUTH", "ECONFIG"]);

type SmtpPool = ReturnType<typeof createPool>;
const transports = new Map<string, SmtpPool>();

/**
 * Email through the channel's own relay (`smtp_url`). SMTP reports acceptance by the relay
 * only, so a send ends at `sent` with no receipts.
 */
export function smtpEmailAdapter(options: Partial<SmtpOptions> = {}): ChannelAdapter {
  const resolved = { ...DEFAULT_OPTIONS, ...options };
  return {
    async send(message) {
      const settings = emailSettings.safeParse(message.channel.settings);
      if (!settings.success) {
        return failed("channel_misconfigured", "The email channel's settings are incomplete or invalid");
      }
      if (!message.recipient) {
        return failed("recipient_unknown", "The contact has no email address to send to");
      }
      // Set here rather than left to nodemailer: it is the provider id replies point back to.
      const messageId = `<${message.id.toLowerCase()}@${domainOf(settings.data.address)}>`;
      const mail = await composeMail(message, settings.data, message.recipient, messageId);
      try {
        await smtpSpan(settings.data.smtp_url, () => transportFor(settings.data.smtp_url, resolved).sendMail(mail));
      } catch (error) {
        return outcomeOfError(error);
      }
      return { outcome: "sent", providerMessageId: messageId, receipts: [] };
    },
  };
}

/**
 * The relay's exchange in a span: its host and, on failure, the SMTP reply code or
 * nodemailer's error code; never the credentials of `smtp_url`, an address or the mail.
 */
function smtpSpan<T>(smtpUrl: string, send: () => Promise<T>): Promise<T> {
  const attributes = () => ({ "server.address": hostOf(smtpUrl) });
  return withSpan("SMTP send", { kind: "client", attributes }, async (span) => {
    try {
      return await send();
    } catch (error) {
      const fault = (error ?? {}) as NodemailerError;
      if (typeof fault.responseCode === "number") span.setAttribute("smtp.response.status_code", fault.responseCode);
      if (typeof fault.code === "string") span.setAttribute("error.type", fault.code);
      throw error;
    }
  });
}

/** Closes every cached pool (worker shutdown, tests): open connections end with QUIT. */
export function closeSmtpTransports(): void {
  for (const transport of transports.values()) transport.close();
  transports.clear();
}

/** A pooled transport per relay, so consecutive sends reuse an authenticated connection. */
function transportFor(smtpUrl: string, options: SmtpOptions): SmtpPool {
  // The timeout is part of the key: a pool is configured once, when it is created.
  const key = `${options.timeoutMs} ${smtpUrl}`;
  const cached = transports.get(key);
  if (cached) {
    // Re-inserted so that the Map's order is least recently used first.
    transports.delete(key);
    transports.set(key, cached);
    return cached;
  }
  const transport = createPool(smtpUrl, options);
  transports.set(key, transport);
  evictOldest();
  return transport;
}

function createPool(smtpUrl: string, options: SmtpOptions) {
  return nodemailer.createTransport({
    url: smtpUrl,
    pool: true,
    // nodemailer's defaults (2 and 10 minutes) would hold a delivery job on a stalled relay.
    connectionTimeout: options.timeoutMs,
    greetingTimeout: options.timeoutMs,
    socketTimeout: options.timeoutMs,
  });
}

function evictOldest(): void {
  if (transports.size <= MAX_TRANSPORTS) return;
  const [oldestKey, oldest] = transports.entries().next().value ?? [];
  if (oldestKey === undefined || !oldest) return;
  transports.delete(oldestKey);
  oldest.close();
}

async function composeMail(
  message: OutboundMessage,
  settings: EmailSettings,
  recipient: string,
  messageId: string,
): Promise<SendMailOptions> {
  const threadIds = message.conversation.threadIds.flatMap((id) => asMessageId(id) ?? []);
  const mail: SendMailOptions = {
    from: settings.from_name ? { name: settings.from_name, address: settings.address } : settings.address,
    to: recipient,
    subject: subjectOf(message.conversation.subject, threadIds.length > 0, settings),
    messageId,
    text: message.text ?? "",
  };
  if (threadIds.length > 0) {
    mail.inReplyTo = threadIds.at(-1);
    mail.references = threadIds.slice(-MAX_REFERENCES);
  }
  if (message.attachment) {
    const { filename, contentType } = message.attachment;
    mail.attachments = [{ filename, contentType, content: await message.attachment.read() }];
  }
  return mail;
}

/** Thread ids are stored as the parser gives them (`<id>`); a bare id is bracketed, junk dropped. */
function asMessageId(id: string): string | null {
  const trimmed = id.trim();
  if (/^<[^<>\s]+>$/.test(trimmed)) return trimmed;
  if (/^[^<>\s]+$/.test(trimmed)) return `<${trimmed}>`;
  return null;
}

function subjectOf(subject: string | null, isReply: boolean, settings: EmailSettings): string {
  const trimmed = subject?.trim();
  if (!trimmed) return `Message from ${settings.from_name ?? settings.address}`;
  // Mail clients group by subject too: one "Re:" keeps the reply in the customer's thread.
  if (!isReply || /^re\s*:/i.test(trimmed)) return trimmed;
  return `Re: ${trimmed}`;
}

function domainOf(address: string): string {
  return address.slice(address.lastIndexOf("@") + 1).toLowerCase();
}

/**
 * RFC 5321 reply classes: 5xx refuses the message for good (a `failed` with the relay's own
 * words), 4xx asks to try later. 503 (bad sequence of commands) is a session fault rather than
 * a verdict on the message, so it is retried, as nodemailer's `isPermanentResponseCode` says.
 */
function outcomeOfError(error: unknown): SendResult {
  const fault = (error ?? {}) as NodemailerError;
  const reply = fault.response?.trim() || fault.message || "The SMTP relay refused the message";
  // A refused login (535) carries a reply code too, but no retry fixes the credentials; a
  // 4xx one (454, temporary authentication failure) is retried as any 4xx.
  const permanent = typeof fault.responseCode !== "number" || fault.responseCode >= 500;
  if (MISCONFIGURED_CODES.has(fault.code ?? "") && permanent) {
    const words = typeof fault.responseCode === "number" ? `The SMTP relay refused the login: ${reply}` : fault.message;
    return failed("channel_misconfigured", words);
  }
  if (typeof fault.responseCode === "number") {
    const code = fault.responseCode;
    if (code >= 500 && code < 600 && code !== 503) return failed(String(code), reply);
    throw new TemporaryChannelError(`The SMTP relay deferred the message: ${reply}`);
  }
  if (TRANSIENT_CODES.has(fault.code ?? "") || TRANSIENT_CODES.has(fault.originalCode ?? "")) {
    throw new TemporaryChannelError(`The SMTP relay could not be reached (${fault.code}): ${fault.message}`);
  }
  // Nodemailer found no usable recipient in the address before talking to the relay.
  if (fault.code === "EENVELOPE") return failed("recipient_invalid", fault.message);
  throw error;
}

function failed(code: string, message: string): SendResult {
  return { outcome: "failed", error: { code, message } };
}
