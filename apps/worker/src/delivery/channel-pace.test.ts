import { describe, expect, it } from "vitest";
import { ChannelPace } from "./channel-pace.js";

describe("ChannelPace", () => {
  it("lets no more than the rate leave on one channel in any second, even from concurrent jobs", async () => {
    const pace = new ChannelPace();
    const started = performance.now();
    const leftAt: number[] = [];
    // Three jobs of the same channel sending at once, 30 messages at 50 a second.
    await Promise.all(
      [0, 1, 2].map(async () => {
        for (let i = 0; i < 10; i++) {
          await pace.take("ch_whatsapp", 50);
          leftAt.push(performance.now() - started);
        }
      }),
    );
    leftAt.sort((a, b) => a - b);
    // 30 sends 20 ms apart: the n-th never leaves before its slot, n x 20 ms after the first
    // (a timer that fires late delays one send, never brings the next one forward), so no
    // second holds more than 50; the last leaves after 580 ms at the earliest.
    expect(leftAt.at(-1)).toBeGreaterThanOrEqual(575);
    for (const [n, at] of leftAt.entries()) expect(at, `send ${n}`).toBeGreaterThanOrEqual(n * 20 - 2);
  });

  it("paces each channel on its own, and not at all without a rate", async () => {
    const pace = new ChannelPace();
    const started = performance.now();
    await Promise.all([
      (async () => {
        for (let i = 0; i < 5; i++) await pace.take("ch_a", 20);
      })(),
      (async () => {
        for (let i = 0; i < 5; i++) await pace.take("ch_b", 20);
      })(),
      (async () => {
        for (let i = 0; i < 1000; i++) await pace.take("ch_sandbox", undefined);
      })(),
    ]);
    const elapsed = performance.now() - started;
    // Four gaps of 50 ms on each channel, side by side: about 200 ms, not 450.
    expect(elapsed).toBeGreaterThanOrEqual(195);
    expect(elapsed).toBeLessThan(400);
  });
});
