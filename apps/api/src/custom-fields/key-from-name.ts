const MAX_KEY_LENGTH = 64;
/** The key of a name with no Latin letter or digit in it ("!!!", "日付"). */
const FALLBACK_KEY = "field";

/** "Date of birth" -> "date_of_birth"; "Café № 1" -> "cafe_no_1"; "2nd line" -> "f_2nd_line"; "!!!" -> "field". */
export function keyFromName(name: string): string {
  const words = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "");
  if (words === "") return FALLBACK_KEY;
  const key = /^[a-z]/.test(words) ? words : `f_${words}`;
  return key.slice(0, MAX_KEY_LENGTH).replace(/_+$/, "");
}
