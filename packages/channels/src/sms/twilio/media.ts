import { MAX_UPLOAD_BYTES } from "@parley/schema";
import { bareContentType, inboundFilename } from "../../inbound-file.js";
import { createTwilioClient, type TwilioOptions } from "./client.js";
import type { TwilioSmsSettings } from "./settings.js";
import type { TwilioInboundMedia } from "./webhook.js";

/** A file of an incoming MMS, as an attachment stores it. */
export interface TwilioInboundFile {
  bytes: Buffer;
  /** Without parameters (`image/jpeg`). */
  contentType: string;
  /** `<kind>-<MediaSid>.<ext>`: Twilio gives no file name. */
  filename: string;
}

/**
 * The bytes of an incoming message's `MediaUrlN`, with the account's credentials where Twilio
 * asks for them (its API host, "Enforce HTTP Auth on Media URLs"), never on the CDN it
 * redirects to; at most the size of an upload. Temporary faults throw `TemporaryChannelError`;
 * a refusal, a gone or too large file throws `TwilioApiError`.
 */
export async function fetchTwilioInboundMedia(
  options: TwilioOptions,
  settings: TwilioSmsSettings,
  media: TwilioInboundMedia,
  maxBytes: number = MAX_UPLOAD_BYTES,
): Promise<TwilioInboundFile> {
  const download = await createTwilioClient(options, settings).fetchMedia(media.url, { maxBytes });
  const contentType =
    bareContentType(media.contentType) ?? bareContentType(download.contentType) ?? "application/octet-stream";
  return { bytes: download.bytes, contentType, filename: inboundFilename(mediaSidOf(media.url), contentType) };
}

/** The media's SID (`ME...`), the last segment of its URL; the URL's last segment whatever it is otherwise. */
function mediaSidOf(url: string): string {
  try {
    return new URL(url).pathname.split("/").filter(Boolean).pop() ?? "media";
  } catch {
    return "media";
  }
}
