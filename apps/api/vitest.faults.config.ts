import { defineConfig } from "vitest/config";

/**
 * `pnpm test:faults`: every fault test of test/faults at full size (`PARLEY_FAULTS=full`:
 * 10,000 deliveries instead of 1,000, longer outages), the slow ones (`*.slow.test.ts`)
 * included. One file at a time: each loads the machine, and some measure latencies.
 */
export default defineConfig({
  resolve: { conditions: ["source"] },
  ssr: { resolve: { conditions: ["source"] } },
  test: {
    globalSetup: ["../../packages/db/src/vitest-global-setup.ts"],
    include: ["test/faults/**/*.test.ts"],
    env: { PARLEY_FAULTS: "full" },
    fileParallelism: false,
    testTimeout: 900_000,
    hookTimeout: 120_000,
  },
});
