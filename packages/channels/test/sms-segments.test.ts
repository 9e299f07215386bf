import { describe, expect, it } from "vitest";
import { countSegments } from "../src/sms/segments.js";

/** 3GPP TS 23.038 §6.2.1, typed here from the standard's table (0x1B, the escape, left out). */
const GSM_DEFAULT =
  "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";
const GSM_EXTENSION = ["\f", "^", "{", "}", "\\", "[", "~", "]", "|", "€"];
const EMOJI = "😀";

describe("countSegments: GSM-7", () => {
  it("takes every character of the default alphabet as one septet", () => {
    expect(GSM_DEFAULT).toHaveLength(127);
    expect(countSegments(GSM_DEFAULT)).toEqual({ encoding: "GSM-7", segments: 1, characters: 127 });
  });

  it.each(GSM_EXTENSION)("counts the extension character %j twice", (character) => {
    expect(countSegments(character)).toEqual({ encoding: "GSM-7", segments: 1, characters: 2 });
  });

  it("sends 160 characters in one part and 161 in two", () => {
    expect(countSegments("a".repeat(160))).toEqual({ encoding: "GSM-7", segments: 1, characters: 160 });
    expect(countSegments("a".repeat(161))).toEqual({ encoding: "GSM-7", segments: 2, characters: 161 });
  });

  it("fills parts of 153 characters: 306 in two, 307 in three", () => {
    expect(countSegments("a".repeat(306)).segments).toBe(2);
    expect(countSegments("a".repeat(307)).segments).toBe(3);
  });

  it("counts extension characters twice against the 160", () => {
    expect(countSegments("€".repeat(80))).toEqual({ encoding: "GSM-7", segments: 1, characters: 160 });
    expect(countSegments(`${"€".repeat(80)}a`)).toEqual({ encoding: "GSM-7", segments: 2, characters: 161 });
  });

  it("never splits an escape sequence: a two-septet character that would straddle two parts starts the next", () => {
    // 152 septets, then the €'s 2 would make 154 > 153: it opens the second part (2 + 151 = 153).
    expect(countSegments(`${"a".repeat(152)}€${"a".repeat(151)}`)).toEqual({
      encoding: "GSM-7",
      segments: 2,
      characters: 305,
    });
    // 306 septets travel in two parts of 153, but not these: the second part is full at 153.
    expect(countSegments(`${"a".repeat(152)}€${"a".repeat(152)}`)).toEqual({
      encoding: "GSM-7",
      segments: 3,
      characters: 306,
    });
  });
});

describe("countSegments: UCS-2", () => {
  it("switches the whole text to UCS-2 for one character outside both tables", () => {
    expect(countSegments(`${"a".repeat(69)}ć`)).toEqual({ encoding: "UCS-2", segments: 1, characters: 70 });
    expect(countSegments("Grüße aus Kraków")).toMatchObject({ encoding: "UCS-2" });
  });

  it("sends 70 units in one part and 71 in two", () => {
    expect(countSegments("ж".repeat(70))).toEqual({ encoding: "UCS-2", segments: 1, characters: 70 });
    expect(countSegments("ж".repeat(71))).toEqual({ encoding: "UCS-2", segments: 2, characters: 71 });
  });

  it("fills parts of 67 units: 134 in two, 135 in three", () => {
    expect(countSegments("ж".repeat(134)).segments).toBe(2);
    expect(countSegments("ж".repeat(135)).segments).toBe(3);
  });

  it("counts an emoji as two units, and one emoji makes a GSM text UCS-2", () => {
    expect(countSegments(EMOJI)).toEqual({ encoding: "UCS-2", segments: 1, characters: 2 });
    expect(countSegments(`Hello ${EMOJI}`)).toEqual({ encoding: "UCS-2", segments: 1, characters: 8 });
    expect(countSegments(`${"a".repeat(159)}${EMOJI}`)).toEqual({ encoding: "UCS-2", segments: 3, characters: 161 });
  });

  it("never splits a surrogate pair: an emoji that would straddle two parts starts the next", () => {
    // 66 units, then the emoji's 2 would make 68 > 67: it opens the second part (2 + 65 = 67).
    expect(countSegments(`${"ж".repeat(66)}${EMOJI}${"ж".repeat(65)}`)).toEqual({
      encoding: "UCS-2",
      segments: 2,
      characters: 133,
    });
    // 134 units travel in two parts of 67, but not these.
    expect(countSegments(`${"ж".repeat(66)}${EMOJI}${"ж".repeat(66)}`)).toEqual({
      encoding: "UCS-2",
      segments: 3,
      characters: 134,
    });
  });

  it("counts the characters of both tables as UCS-2 units once the text is UCS-2", () => {
    expect(countSegments(`€${EMOJI}`)).toEqual({ encoding: "UCS-2", segments: 1, characters: 3 });
  });
});
