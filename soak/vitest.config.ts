import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The short soak runs for minutes, the hour's for an hour (`pnpm soak`, never in CI).
    testTimeout: 15 * 60_000,
    hookTimeout: 60_000,
  },
});
