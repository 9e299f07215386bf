/**
 * How carriers count a text: in GSM-7 septets or UCS-2 units, and in how many parts
 * (segments) it travels. Providers bill per segment, so the count is told to the sender.
 *
 * The alphabet is GSM 03.38, 3GPP TS 23.038 §6.2.1: the default alphabet below (one septet
 * each) and its extension table (§6.2.1.1), reached by an escape, so two septets each. A
 * text with any other character goes as UCS-2: UTF-16 code units, so a character outside
 * the Basic Multilingual Plane (an emoji) takes two.
 *
 * One part carries 160 septets (GSM-7) or 70 units (UCS-2). A longer text is split into
 * parts of 153 septets or 67 units: each part gives 7 bytes to the concatenation header
 * (UDH). A part never ends inside an escape sequence or a surrogate pair, so a part may
 * hold one unit less than its size: the parts are counted by filling them character by
 * character, as carriers split them, not by dividing the length.
 */

export type SmsEncoding = "GSM-7" | "UCS-2";

export interface SegmentCount {
  encoding: SmsEncoding;
  /** The parts the text travels in; an empty text still takes one. */
  segments: number;
  /** The text's length in the encoding's units: septets (an extension character is two) or UTF-16 code units. */
  characters: number;
}

/**
 * The GSM 7-bit default alphabet, in code order 0x00 to 0x7F (3GPP TS 23.038 §6.2.1).
 * 0x1B is the escape to the extension table, not a character: written here as U+001B and
 * left out of the set below.
 */
const GSM_DEFAULT_ALPHABET =
  "@£$¥èéùìòÇ\nØø\rÅå" +
  "Δ_ΦΓΛΩΠΨΣΘΞ\u001bÆæßÉ" +
  " !\"#¤%&'()*+,-./" +
  "0123456789:;<=>?" +
  "¡ABCDEFGHIJKLMNO" +
  "PQRSTUVWXYZÄÖÑÜ§" +
  "¿abcdefghijklmno" +
  "pqrstuvwxyzäöñüà";

/**
 * The extension table's characters (3GPP TS 23.038 §6.2.1.1): form feed (0x0A), ^ (0x14),
 * { (0x28), } (0x29), \ (0x2F), [ (0x3C), ~ (0x3D), ] (0x3E), | (0x40), € (0x65). Each is
 * sent as the escape and its code: two septets.
 */
const GSM_EXTENSION_TABLE = "\f^{}\\[~]|€";

const ESCAPE = "\u001b";
const basic = new Set([...GSM_DEFAULT_ALPHABET].filter((character) => character !== ESCAPE));
const extension = new Set(GSM_EXTENSION_TABLE);

const PART_SIZES: Record<SmsEncoding, { single: number; multi: number }> = {
  "GSM-7": { single: 160, multi: 153 },
  "UCS-2": { single: 70, multi: 67 },
};

/** The units each character of `text` takes in GSM-7, or undefined when one has no GSM-7 code. */
function gsmUnits(text: string): number[] | undefined {
  const units: number[] = [];
  for (const character of text) {
    if (basic.has(character)) units.push(1);
    else if (extension.has(character)) units.push(2);
    else return undefined;
  }
  return units;
}

/** The UTF-16 code units of each character (code point) of `text`: 2 for a surrogate pair. */
function ucs2Units(text: string): number[] {
  return Array.from(text, (character) => character.length);
}

/** Parts of `size` units, filled in order, none splitting a character's units. */
function partsOf(units: number[], size: number): number {
  let parts = 1;
  let filled = 0;
  for (const unit of units) {
    if (filled + unit > size) {
      parts += 1;
      filled = 0;
    }
    filled += unit;
  }
  return parts;
}

/** The encoding, segments and length of `text` as carriers count them (see the file's comment). */
export function countSegments(text: string): SegmentCount {
  const gsm = gsmUnits(text);
  const encoding: SmsEncoding = gsm ? "GSM-7" : "UCS-2";
  const units = gsm ?? ucs2Units(text);
  const characters = units.reduce((sum, unit) => sum + unit, 0);
  const sizes = PART_SIZES[encoding];
  const segments = characters <= sizes.single ? 1 : partsOf(units, sizes.multi);
  return { encoding, segments, characters };
}
