import { afterEach, describe, expect, it } from "vitest";
import { nodeOptionsFrom } from "../lib.mjs";

describe("nodeOptionsFrom", () => {
  afterEach(() => {
    delete process.env.BENCH_TEST_NODE_ARGS;
  });

  it("splits the variable's options on any white space, with none left empty", () => {
    process.env.BENCH_TEST_NODE_ARGS = " --trace-gc-nvp  --max-old-space-size=512\t";
    expect(nodeOptionsFrom("BENCH_TEST_NODE_ARGS")).toEqual(["--trace-gc-nvp", "--max-old-space-size=512"]);
  });

  it("gives no option for a variable unset or blank (an empty one would be taken for the script)", () => {
    expect(nodeOptionsFrom("BENCH_TEST_NODE_ARGS")).toEqual([]);
    process.env.BENCH_TEST_NODE_ARGS = "  ";
    expect(nodeOptionsFrom("BENCH_TEST_NODE_ARGS")).toEqual([]);
  });
});
