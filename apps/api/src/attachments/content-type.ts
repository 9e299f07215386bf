import { type MediaKind, mediaKindOf, uploadTypesByExtension } from "@parley/schema";

const GENERIC_TYPES = new Set(["", "application/octet-stream", "binary/octet-stream"]);

export interface ResolvedType {
  contentType: string;
  kind: MediaKind;
}

/**
 * The declared type counts; only a generic one (`application/octet-stream`) lets the
 * file name's extension decide. Undefined when the type is not in the accepted table.
 */
export function resolveUploadType(declared: string, filename: string): ResolvedType | undefined {
  const base = declared.split(";")[0]?.trim().toLowerCase() ?? "";
  const extension = filename.includes(".") ? (filename.split(".").pop()?.toLowerCase() ?? "") : "";
  const contentType = GENERIC_TYPES.has(base) ? (uploadTypesByExtension[extension] ?? base) : base;
  const kind = mediaKindOf(contentType);
  return kind ? { contentType, kind } : undefined;
}
