import v8 from "node:v8";
import vm from "node:vm";
import { describe, expect, it } from "vitest";
import { InFlightList } from "./in-flight-list.js";

const valuesOf = <T extends object>(list: InFlightList<T>) => {
  const values: T[] = [];
  list.forEach((value) => {
    values.push(value);
  });
  return values;
};

describe("InFlightList", () => {
  it("holds what was added and not yet removed, in the order added", () => {
    const list = new InFlightList<{ n: number }>();
    const [one, two, three, four] = [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }];
    const first = list.add(one);
    const second = list.add(two);
    const third = list.add(three);
    const fourth = list.add(four);
    list.remove(second);
    list.remove(fourth);
    expect(valuesOf(list)).toEqual([one, three]);
    expect(list.size).toBe(2);
    list.remove(first);
    list.remove(third);
    expect(valuesOf(list)).toEqual([]);
    expect(list.size).toBe(0);
    const five = { n: 5 };
    list.add(five);
    expect(valuesOf(list)).toEqual([five]);
  });

  it("keeps nothing in a removed entry, and removing it again changes nothing", () => {
    const list = new InFlightList<{ n: number }>();
    const first = list.add({ n: 1 });
    const middle = list.add({ n: 2 });
    list.add({ n: 3 });
    list.remove(middle);
    expect(middle).toEqual({ value: undefined, prev: undefined, next: undefined });
    list.remove(middle);
    list.remove(first);
    expect(list.size).toBe(1);
    expect(valuesOf(list)).toEqual([{ n: 3 }]);
  });

  it("lets the visitor remove the value it is given", () => {
    const list = new InFlightList<{ n: number }>();
    const entries = new Map([1, 2, 3].map((n) => [n, list.add({ n })]));
    const seen: number[] = [];
    list.forEach((value) => {
      seen.push(value.n);
      const entry = entries.get(value.n);
      if (entry) list.remove(entry);
    });
    expect(seen).toEqual([1, 2, 3]);
    expect(list.size).toBe(0);
  });

  it("lets finished requests die young, where a Set churned the same way has V8 promote them all", async () => {
    // What the garbage collector keeps is what this measures: old-space growth while 50
    // clients each add a request of some 10 KB, wait a timer and remove it, after the
    // structure itself has grown old (two full collections).
    const set = new Set<object>();
    set.add({});
    const list = new InFlightList<object>();
    list.add({});
    const throughSet = await promotedWhileChurning((request) => {
      set.add(request);
      return () => set.delete(request);
    });
    const throughList = await promotedWhileChurning((request) => {
      const entry = list.add(request);
      return () => list.remove(entry);
    });
    // Measured: 130 to 170 MB in a second through the Set, 1.5 MB through the list.
    expect(throughSet.promotedBytes).toBeGreaterThan(20 * 2 ** 20);
    expect(throughList.promotedBytes).toBeLessThan(throughSet.promotedBytes / 10);
    expect(throughList.requests).toBeGreaterThan(1_000);
  });
});

const CHURN_MS = 700;

async function promotedWhileChurning(track: (request: object) => () => void) {
  const gc = collector();
  gc();
  gc();
  let promotedBytes = 0;
  let last = oldSpaceUsed();
  const sampler = setInterval(() => {
    const now = oldSpaceUsed();
    if (now > last) promotedBytes += now - last;
    last = now;
  }, 2);
  const started = Date.now();
  let requests = 0;
  const client = async () => {
    while (Date.now() - started < CHURN_MS) {
      const n = requests++;
      const request = { body: Array.from({ length: 100 }, (_, part) => ({ part, text: `part ${part} of ${n}` })) };
      const untrack = track(request);
      await new Promise((resolve) => setTimeout(resolve, 1));
      untrack();
    }
  };
  await Promise.all(Array.from({ length: 50 }, client));
  clearInterval(sampler);
  return { promotedBytes, requests };
}

function oldSpaceUsed(): number {
  return v8.getHeapSpaceStatistics().find((space) => space.space_name === "old_space")?.space_used_size ?? 0;
}

function collector(): () => void {
  v8.setFlagsFromString("--expose-gc");
  return vm.runInNewContext("gc") as () => void;
}
