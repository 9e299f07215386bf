import { createHash } from "node:crypto";
import { MAX_UPLOAD_BYTES } from "@parley/schema";
import type { MetaOptions } from "../adapter.js";
import { bareContentType, inboundFilename } from "../inbound-file.js";
import { MetaGraphError } from "./errors.js";
import { createGraphClient, type GraphClient } from "./graph-client.js";
import type { InboundMedia } from "./webhook.js";

/** A received file is stored as an attachment: the same limit as an upload. */
export const MAX_INBOUND_MEDIA_BYTES = MAX_UPLOAD_BYTES;

export interface FetchedMedia {
  bytes: Buffer;
  /** Without parameters (`audio/ogg`, not `audio/ogg; codecs=opus`), as attachments store it. */
  contentType: string;
  filename: string;
}

interface Source {
  url: string;
  bearer: boolean;
  contentType: string | null;
}

/**
 * The bytes of a file a contact sent. WhatsApp media is looked up by id (`GET /{media-id}`
 * gives a short-lived URL that needs the token); Messenger and Instagram give a signed CDN
 * URL in the webhook. Temporary faults throw `TemporaryChannelError`; a refusal, a gone
 * file or one above `maxBytes` throws `MetaGraphError`.
 */
export async function fetchInboundMedia(
  meta: MetaOptions,
  accessToken: string,
  media: InboundMedia,
  maxBytes: number = MAX_INBOUND_MEDIA_BYTES,
): Promise<FetchedMedia> {
  const graph = createGraphClient(meta, accessToken);
  const source = await sourceOf(graph, media, maxBytes);
  const download = await graph.download(source.url, { bearer: source.bearer, maxBytes });
  const contentType =
    bareContentType(media.contentType) ??
    bareContentType(source.contentType) ??
    bareContentType(download.contentType) ??
    "application/octet-stream";
  return { bytes: download.bytes, contentType, filename: filenameOf(media, contentType) };
}

async function sourceOf(graph: GraphClient, media: InboundMedia, maxBytes: number): Promise<Source> {
  if (media.id) return resolveMediaId(graph, media.id, maxBytes);
  if (media.url) return { url: media.url, bearer: false, contentType: null };
  throw new MetaGraphError("media_missing", "The webhook named no media id or URL");
}

/** WhatsApp: `{url, mime_type, sha256, file_size, id}`; a file known to be too large is not fetched. */
async function resolveMediaId(graph: GraphClient, id: string, maxBytes: number): Promise<Source> {
  const answer = await graph.get(encodeURIComponent(id));
  const record = typeof answer === "object" && answer !== null ? (answer as Record<string, unknown>) : {};
  if (typeof record.url !== "string" || record.url.length === 0) {
    throw new MetaGraphError("unexpected_response", `Meta gave no URL for media ${id}`);
  }
  if (typeof record.file_size === "number" && record.file_size > maxBytes) {
    throw new MetaGraphError("media_too_large", `The file is larger than ${maxBytes} bytes`);
  }
  const contentType = typeof record.mime_type === "string" ? record.mime_type : null;
  return { url: record.url, bearer: true, contentType };
}

/** The sender's file name where there is one (WhatsApp documents), else `<kind>-<id>.<ext>`. */
function filenameOf(media: InboundMedia, contentType: string): string {
  const given = media.filename ? safeFilename(media.filename) : "";
  if (given) return given;
  // A CDN URL has no short id of its own; a hash of it keeps the name stable across retries.
  const id =
    media.id ??
    createHash("sha256")
      .update(media.url ?? "")
      .digest("hex")
      .slice(0, 16);
  return inboundFilename(id, contentType);
}

/** The name without any folder part or control characters: it names a stored file. */
function safeFilename(name: string): string {
  const base = name.split(/[/\\]/).pop() ?? "";
  return base
    .replace(/\p{Cc}/gu, "")
    .trim()
    .slice(0, 200);
}
