import PostalMime, { type Address, type Attachment, addressParser, type Email } from "postal-mime";
import { storableText } from "../storable-text.js";
import { htmlToText } from "./html-text.js";
import { withoutQuotedHistory } from "./reply-text.js";

export interface InboundAttachment {
  /** Safe to show and to store under: no path, no control characters, at most 200 characters. */
  filename: string;
  contentType: string;
  content: Buffer;
}

/** What Parley takes from a received email. Message ids keep their angle brackets: `<id@host>`. */
export interface InboundEmail {
  messageId: string | null;
  inReplyTo: string | null;
  /** The thread's ancestors as the References header lists them, oldest first. */
  references: string[];
  /** The address lower-cased. */
  from: { address: string; name: string | null } | null;
  /** To, Cc, Delivered-To and X-Original-To, lower-cased and deduplicated. */
  to: string[];
  subject: string | null;
  /** The new part of the message: quoted history removed where it can be told apart. */
  text: string | null;
  date: Date | null;
  attachments: InboundAttachment[];
}

const MAX_FILENAME_CHARS = 200;

/**
 * Parses a raw RFC 5322 message. Mail comes from anyone: a message that does not parse
 * gives empty fields rather than an error.
 */
export async function parseInboundEmail(raw: Buffer | string): Promise<InboundEmail> {
  try {
    return toInboundEmail(await PostalMime.parse(raw));
  } catch {
    return emptyEmail();
  }
}

/** The ids a reply may point to, newest first: its parent, then References from the end. */
export function threadHints(email: InboundEmail): string[] {
  const ids = [email.inReplyTo, ...[...email.references].reverse()];
  return [...new Set(ids.filter((id): id is string => id !== null))];
}

function toInboundEmail(parsed: Email): InboundEmail {
  return storable({
    messageId: messageIdsIn(parsed.messageId)[0] ?? null,
    inReplyTo: messageIdsIn(parsed.inReplyTo)[0] ?? null,
    references: messageIdsIn(parsed.references),
    from: senderOf(parsed.from),
    to: recipientsOf(parsed),
    subject: parsed.subject?.trim() || null,
    text: bodyOf(parsed),
    date: dateOf(parsed.date),
    attachments: parsed.attachments.filter((part) => !part.related).map(toAttachment),
  });
}

/** Every string of a parsed email as PostgreSQL can store it (see storableText). */
function storable<T>(value: T): T {
  if (typeof value === "string") return storableText(value) as T;
  if (Array.isArray(value)) return value.map(storable) as T;
  if (typeof value !== "object" || value === null || value instanceof Date || Buffer.isBuffer(value)) return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, storable(item)])) as T;
}

function emptyEmail(): InboundEmail {
  return {
    messageId: null,
    inReplyTo: null,
    references: [],
    from: null,
    to: [],
    subject: null,
    text: null,
    date: null,
    attachments: [],
  };
}

/**
 * Message ids in one form, `<local@domain>`, whatever the header's spacing, comments or
 * missing brackets, so that they compare equal to the Message-ID the SMTP adapter sets.
 */
function messageIdsIn(header: string | undefined): string[] {
  if (!header) return [];
  const bracketed = header.match(/<[^<>\s]+>/g);
  // Some clients drop the brackets: whitespace- or comma-separated ids with an "@".
  const ids =
    bracketed ??
    header
      .split(/[\s,]+/)
      .filter((token) => /^[^<>()]+@[^<>()]+$/.test(token))
      .map((id) => `<${id}>`);
  // An id cannot be longer than a header line (RFC 5322: 998 bytes); a longer one is not
  // an id, and no index could hold it.
  return [...new Set(ids.filter((id) => Buffer.byteLength(id, "utf8") <= MAX_MESSAGE_ID_BYTES))];
}

const MAX_MESSAGE_ID_BYTES = 998;

function mailboxesOf(addresses: Address[] | Address | undefined): { address: string; name: string }[] {
  return [addresses ?? []].flat().flatMap((entry) => (entry.group ? entry.group : [entry]));
}

function senderOf(from: Address | undefined): InboundEmail["from"] {
  const mailbox = mailboxesOf(from).find((entry) => entry.address.includes("@"));
  if (!mailbox) return null;
  return { address: mailbox.address.trim().toLowerCase(), name: mailbox.name.trim() || null };
}

function recipientsOf(parsed: Email): string[] {
  // Delivered-To and X-Original-To name the inbox that received it when To/Cc do not (Bcc, lists, aliases).
  const envelopeHeaders = parsed.headers
    .filter((header) => header.key === "delivered-to" || header.key === "x-original-to")
    .flatMap((header) => addressParser(header.value, { flatten: true }));
  const all = [...mailboxesOf(parsed.to), ...mailboxesOf(parsed.cc), ...mailboxesOf(envelopeHeaders)];
  const addresses = all.map((entry) => entry.address.trim().toLowerCase()).filter((address) => address.includes("@"));
  return [...new Set(addresses)];
}

function dateOf(value: string | undefined): Date | null {
  if (!value) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

function bodyOf(parsed: Email): string | null {
  const body = parsed.text?.trim() ? parsed.text : parsed.html ? htmlToText(parsed.html) : "";
  const normalized = body.replace(/\r\n?/g, "\n").trim();
  return normalized ? withoutQuotedHistory(normalized) : null;
}

function toAttachment(part: Attachment): InboundAttachment {
  const contentType = part.mimeType?.trim().toLowerCase() || "application/octet-stream";
  return { filename: safeFilename(part.filename, contentType), contentType, content: contentOf(part) };
}

function contentOf(part: Attachment): Buffer {
  const { content } = part;
  if (typeof content === "string") return Buffer.from(content, part.encoding === "base64" ? "base64" : "utf8");
  if (content instanceof ArrayBuffer) return Buffer.from(content);
  return Buffer.from(content.buffer, content.byteOffset, content.byteLength);
}

/**
 * The sender chooses the name: only its last path segment is kept, without control and
 * bidirectional-override characters (which disguise an extension) or characters that
 * file systems refuse, and without leading dots (hidden files, "..").
 */
export function safeFilename(name: string | null | undefined, contentType: string): string {
  const lastSegment = (name ?? "").split(/[/\\]/).pop() ?? "";
  const cleaned = [...lastSegment]
    .filter((char) => !isUnsafeChar(char))
    .join("")
    .replace(/[<>:"|?*]/g, "_")
    .trim()
    .replace(/^\.+/, "")
    .trim();
  if (!cleaned) return `attachment.${extensionFor(contentType)}`;
  return truncateKeepingExtension(cleaned, MAX_FILENAME_CHARS);
}

function isUnsafeChar(char: string): boolean {
  const code = char.codePointAt(0) ?? 0;
  const control = code < 0x20 || (code >= 0x7f && code <= 0x9f);
  const bidi =
    code === 0x200e || code === 0x200f || (code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069);
  return control || bidi;
}

/** Cuts by code point, so that no surrogate pair is split, and keeps a short extension. */
function truncateKeepingExtension(name: string, max: number): string {
  const chars = [...name];
  if (chars.length <= max) return name;
  const dot = name.lastIndexOf(".");
  const extension = dot > 0 && name.length - dot <= 16 ? [...name.slice(dot)] : [];
  return [...chars.slice(0, max - extension.length), ...extension].join("");
}

const EXTENSIONS: Record<string, string> = {
  "image/jpeg": "jpg",
  "image/png": "png",
  "image/gif": "gif",
  "image/webp": "webp",
  "image/heic": "heic",
  "application/pdf": "pdf",
  "application/zip": "zip",
  "text/plain": "txt",
  "text/html": "html",
  "text/csv": "csv",
  "text/calendar": "ics",
  "audio/mpeg": "mp3",
  "audio/ogg": "ogg",
  "video/mp4": "mp4",
  "message/rfc822": "eml",
};

function extensionFor(contentType: string): string {
  return EXTENSIONS[contentType] ?? "bin";
}
