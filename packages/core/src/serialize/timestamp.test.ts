import { describe, expect, it } from "vitest";
import { apiTimestamp } from "./timestamp.js";

describe("apiTimestamp", () => {
  it("writes what Date#toISOString writes, across days, months, leap years and milliseconds", () => {
    const samples = [
      Date.UTC(2026, 10, 26, 17, 25, 41, 123),
      Date.UTC(2024, 1, 29, 0, 0, 0, 0),
      Date.UTC(1999, 11, 31, 23, 59, 59, 999),
      Date.UTC(2000, 0, 1, 9, 5, 7, 5),
      Date.UTC(1000, 0, 1),
      Date.UTC(9999, 11, 31, 23, 59, 59, 999),
      0,
    ];
    // And a spread of instants from 1970 to 2100, every field's range crossed.
    for (let step = 0; step < 5_000; step++) samples.push(Math.floor(step * 826_379_111.7));
    for (const time of samples) expect(apiTimestamp(new Date(time))).toBe(new Date(time).toISOString());
  });

  it("leaves years outside 1000-9999 to the builtin, and an invalid date throws as it does", () => {
    for (const time of [Date.UTC(999, 11, 31), Date.UTC(10_000, 0, 1), Date.UTC(-5, 0, 1)]) {
      expect(apiTimestamp(new Date(time))).toBe(new Date(time).toISOString());
    }
    expect(() => apiTimestamp(new Date(Number.NaN))).toThrow(RangeError);
  });
});
