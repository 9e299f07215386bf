import { describe, expect, it } from "vitest";
import { defaultEndpointLimits, EndpointSlots, SLOW_ATTEMPT_MS, SLOW_MEMORY_MS } from "./endpoint-slots.js";

describe("EndpointSlots", () => {
  it("gives an endpoint at most perEndpoint slots, and lists it as full meanwhile", () => {
    const slots = new EndpointSlots({ perEndpoint: 2, perSlowEndpoint: 1 });
    expect(slots.take("wh_a")).toBe(true);
    expect(slots.take("wh_a")).toBe(true);
    expect(slots.take("wh_a")).toBe(false);
    expect(slots.take("wh_b")).toBe(true);
    expect(slots.full()).toEqual(["wh_a"]);
    slots.release("wh_a", 10);
    expect(slots.full()).toEqual([]);
    expect(slots.take("wh_a")).toBe(true);
  });

  it("limits an endpoint to perSlowEndpoint after a slow attempt, until a quick one or a minute later", () => {
    let now = 0;
    const slots = new EndpointSlots({ perEndpoint: 4, perSlowEndpoint: 1 }, () => now);
    expect(slots.take("wh_slow")).toBe(true);
    expect(slots.take("wh_slow")).toBe(true);
    slots.release("wh_slow", SLOW_ATTEMPT_MS);
    // Still one running: the slow cap is reached.
    expect(slots.full()).toEqual(["wh_slow"]);
    expect(slots.take("wh_slow")).toBe(false);
    slots.release("wh_slow", 50);
    // A quick attempt clears it.
    expect(slots.take("wh_slow")).toBe(true);
    expect(slots.take("wh_slow")).toBe(true);
    slots.release("wh_slow", 10_000);
    slots.release("wh_slow", 10_000);
    expect(slots.take("wh_slow")).toBe(true);
    expect(slots.take("wh_slow")).toBe(false);
    now += SLOW_MEMORY_MS + 1;
    expect(slots.take("wh_slow")).toBe(true);
  });

  it("keeps a fifth of the worker's slots from any one endpoint by default", () => {
    expect(defaultEndpointLimits(10)).toEqual({ perEndpoint: 8, perSlowEndpoint: 2 });
    expect(defaultEndpointLimits(3)).toEqual({ perEndpoint: 2, perSlowEndpoint: 1 });
    expect(defaultEndpointLimits(1)).toEqual({ perEndpoint: 1, perSlowEndpoint: 1 });
  });
});
