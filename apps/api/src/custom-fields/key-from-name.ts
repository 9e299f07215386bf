const MAX_KEY_LENGTH = 64;

/** "Date of birth" -> "date_of_birth"; "Café № 1" -> "cafe_no_1"; "2nd line" -> "f_2nd_line". */
export function keyFromName(name: string): string {
  const words = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "");
  const key = /^[a-z]/.test(words) ? words : `f_${words}`.replace(/_+$/, "");
  return key.slice(0, MAX_KEY_LENGTH).replace(/_+$/, "") || "field";
}
