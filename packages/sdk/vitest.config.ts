import { defineConfig } from "vitest/config";
import { yieldCpuToTheApiSuite } from "../../scripts/test-priority.js";

// Package installs, type-checks and CLI processes: minutes of CPU that can wait, hence the
// nice of 10 and timeouts long enough for a busy machine.
yieldCpuToTheApiSuite(10);

export default defineConfig({
  test: { include: ["src/**/*.test.ts", "test/**/*.test.ts"], testTimeout: 300_000, hookTimeout: 300_000 },
});
