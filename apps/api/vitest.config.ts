import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  // Workspace packages resolve to their TypeScript sources: no rebuild between edits.
  resolve: { conditions: ["source"] },
  ssr: { resolve: { conditions: ["source"] } },
  test: {
    globalSetup: ["../../packages/db/src/vitest-global-setup.ts"],
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // Fault tests too slow for every run: `pnpm test:faults` (vitest.faults.config.ts).
    exclude: [...configDefaults.exclude, "test/faults/**/*.slow.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
