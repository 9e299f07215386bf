import { describe, expect, it } from "vitest";
import { FIGURES, figureResult, PHASES, phaseOrder, REPEATED_PHASES, selectedPhases } from "../figures.mjs";

const figure = (key) => {
  const found = FIGURES.find((each) => each.key === key);
  if (!found) throw new Error(`no figure ${key}`);
  return found;
};

describe("a run's phases", () => {
  it("measures each latency phase in rounds, every one once before any twice", () => {
    const order = phaseOrder(new Set(PHASES), 3);
    const repeated = order.filter(([phase]) => REPEATED_PHASES.includes(phase));
    expect(repeated).toEqual([
      ["webhook_latency", 1],
      ["delivered", 1],
      ["upload", 1],
      ["webhook_latency", 2],
      ["delivered", 2],
      ["upload", 2],
      ["webhook_latency", 3],
      ["delivered", 3],
      ["upload", 3],
    ]);
    // The other phases once each, unnumbered, in their place.
    expect(order.filter(([phase]) => !REPEATED_PHASES.includes(phase))).toEqual(
      PHASES.filter((phase) => !REPEATED_PHASES.includes(phase)).map((phase) => [phase, 0]),
    );
  });

  it("numbers nothing when a phase is measured once, and repeats only the phases asked for", () => {
    expect(phaseOrder(new Set(["upload", "send"]), 1)).toEqual([
      ["send", 0],
      ["upload", 0],
    ]);
    expect(phaseOrder(new Set(["delivered"]), 2)).toEqual([
      ["delivered", 1],
      ["delivered", 2],
    ]);
  });

  it("takes phase keys, figure keys and the memory alias; refuses an unknown one with the known ones", () => {
    expect(selectedPhases("")).toEqual(new Set(PHASES));
    expect(selectedPhases(" spread_list_rps, memory ,levers")).toEqual(new Set(["spread", "send", "levers"]));
    expect(() => selectedPhases("send,nothing")).toThrow(/unknown figure 'nothing'; known: send, list, spread/);
  });
});

describe("a figure's result", () => {
  it("is its worst repetition, and a latency target is met only when that one meets it", () => {
    const p99 = figure("webhook_latency_p99");
    const met = figureResult(p99, [{ value: 31.04 }, { value: 48.96 }, { value: 40 }]);
    expect(met).toMatchObject({ value: 49, met: true });
    expect(met.repetitions).toEqual([
      { value: 31, ratio: null },
      { value: 49, ratio: null },
      { value: 40, ratio: null },
    ]);
    expect(met.notes).toMatch(/^the worst of 3 \(31, 49, 40\); /);

    const missed = figureResult(p99, [{ value: 20 }, { value: 20 }, { value: 50.5 }]);
    expect(missed).toMatchObject({ value: 50.5, met: false });
    // The send -> delivered p99 has the same raised target: 50 ms in its worst repetition.
    const delivered = figure("delivered_p99");
    expect(figureResult(delivered, [{ value: 30 }, { value: 50 }]).met).toBe(true);
    expect(figureResult(delivered, [{ value: 30 }, { value: 50.5 }]).met).toBe(false);
  });

  it("for a rate, is its lowest repetition", () => {
    const throughput = figure("webhook_throughput");
    expect(figureResult(throughput, [{ value: 3100 }, { value: 2990 }, { value: 3500 }])).toMatchObject({
      value: 2990,
      met: false,
    });
  });

  it("against a baseline, is the round with the worst ratio to its own round's baseline", () => {
    const pages = figure("spread_list_rps");
    // The second round is faster in pages per second but the worse beside its own baseline.
    const result = figureResult(pages, [
      { value: 1500, baseline: 1875, ratio: 0.8 },
      { value: 1600, baseline: 2286, ratio: 0.7 },
    ]);
    expect(result).toMatchObject({ value: 1600, baseline: 2286, ratio: 0.7, met: false });
    expect(result.notes).toMatch(/^the worst of 2 \(0.8x, 0.7x\); /);
    expect(
      figureResult(pages, [
        { value: 1500, baseline: 1875, ratio: 0.8 },
        { value: 1600, baseline: 2000, ratio: 0.8 },
      ]).met,
    ).toBe(true);
  });

  it("is not judged when nothing was measured, and a failed repetition does not hide the others", () => {
    expect(figureResult(figure("upload_p50"), [])).toMatchObject({
      value: null,
      met: null,
      notes: "not measured: the harness failed in this phase",
    });
    expect(figureResult(figure("upload_p50"), [{ value: 140 }, { value: Number.NaN }, { value: 151 }])).toMatchObject({
      value: 151,
      met: false,
    });
  });

  it("keeps whether a backlog stayed flat, and a sustained rate with a growing backlog misses", () => {
    const sustained = figure("sustained_rps");
    expect(figureResult(sustained, [{ value: 900, baseline: 1000, ratio: 0.9, flat: true }])).toMatchObject({
      flat: true,
      met: true,
    });
    expect(figureResult(sustained, [{ value: 900, baseline: 1000, ratio: 0.9, flat: false }]).met).toBe(false);
  });
});
