/**
 * RFC 8187 `attr-char`s stay as they are; every other byte of the UTF-8 name is
 * percent-encoded. A UTF-16 half without its other half cannot be encoded as UTF-8: it
 * becomes U+FFFD.
 */
function encodeExtended(value: string): string {
  return encodeURIComponent(value.toWellFormed()).replace(
    /['()*]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/** Printable ASCII without quotes or backslashes: accents dropped, anything else becomes `_`. */
function asciiFallback(value: string): string {
  return value
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .replace(/[^\x20-\x7e]|["\\]/gu, "_");
}

/**
 * `attachment` with an ASCII `filename` for old clients and the exact name as UTF-8
 * `filename*` (RFC 6266): any name, quotes and newlines included, stays one safe header.
 */
export function attachmentDisposition(filename: string): string {
  return `attachment; filename="${asciiFallback(filename)}"; filename*=UTF-8''${encodeExtended(filename)}`;
}
