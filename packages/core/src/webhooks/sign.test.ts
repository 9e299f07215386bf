import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { nextRetryDelayMs, RETRY_SCHEDULE_MS } from "./schedule.js";
import { signatureHeader } from "./sign.js";

interface Vector {
  name: string;
  secrets: string[];
  timestamp: number;
  body: string;
  header: string;
}

/** The vectors @parley/webhook-verify is tested against too: both sides agree byte for byte. */
const vectorsFile = new URL("../../../webhook-verify/test-vectors.json", import.meta.url);
const { vectors } = JSON.parse(await readFile(vectorsFile, "utf8")) as { vectors: Vector[] };

describe("the webhook signer", () => {
  for (const vector of vectors) {
    it(`signs ${vector.name} exactly as the shared vector`, () => {
      expect(signatureHeader(vector.secrets, vector.timestamp, vector.body)).toBe(vector.header);
    });
  }
});

describe("the retry schedule", () => {
  it("waits 5 s, 1 min, 5 min, 30 min, 2 h, 6 h, 12 h, 24 h, then stops: 9 attempts in all", () => {
    const lowest = () => 0;
    const delays = Array.from({ length: 9 }, (_, index) => nextRetryDelayMs(index + 1, false, lowest));
    expect(delays).toEqual([5_000, 60_000, 300_000, 1_800_000, 7_200_000, 21_600_000, 43_200_000, 86_400_000, null]);
  });

  it("adds up to 20 % jitter", () => {
    for (const [index, base] of RETRY_SCHEDULE_MS.entries()) {
      expect(nextRetryDelayMs(index + 1, false, () => 0.999_999)).toBeLessThanOrEqual(Math.round(base * 1.2));
      expect(nextRetryDelayMs(index + 1, false, () => 0.5)).toBe(Math.round(base * 1.1));
    }
  });

  it("in fast mode takes as many seconds as the step had minutes, at least 1 s", () => {
    const lowest = () => 0;
    const delays = Array.from({ length: 8 }, (_, index) => nextRetryDelayMs(index + 1, true, lowest));
    expect(delays).toEqual([1_000, 1_000, 5_000, 30_000, 120_000, 360_000, 720_000, 1_440_000]);
  });
});
