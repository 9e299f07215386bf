import { uploadTypesByExtension } from "@parley/schema";

/**
 * Names and types of the files contacts send, as providers give them (Meta's media, Twilio's
 * `MediaUrlN`): stored as attachments, so named and typed as uploads are.
 */

/** Without parameters (`audio/ogg`, not `audio/ogg; codecs=opus`), as attachments store it; null when not a type. */
export function bareContentType(contentType: string | null | undefined): string | null {
  const bare = contentType?.split(";")[0]?.trim().toLowerCase();
  return bare?.includes("/") ? bare : null;
}

/** `<kind>-<id>.<ext>` (`image-ME0123.jpg`) for a file the provider gave no name. */
export function inboundFilename(id: string, contentType: string): string {
  const major = contentType.split("/")[0] ?? "";
  const kind = ["image", "video", "audio"].includes(major) ? major : "document";
  return `${kind}-${id.replace(/[^\w.-]/g, "_")}.${extensionOf(contentType)}`;
}

const EXTRA_EXTENSIONS: Record<string, string> = { "image/gif": "gif", "audio/opus": "opus" };

/** The first extension the upload table gives the type, so names round-trip through uploads. */
const extensionByType: Record<string, string> = Object.fromEntries(
  Object.entries(uploadTypesByExtension)
    .reverse()
    .map(([extension, type]) => [type, extension]),
);

function extensionOf(contentType: string): string {
  return extensionByType[contentType] ?? EXTRA_EXTENSIONS[contentType] ?? "bin";
}
