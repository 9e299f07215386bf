import { defineConfig } from "vitest/config";
import { yieldCpuToTheApiSuite } from "../../scripts/test-priority.js";

yieldCpuToTheApiSuite(5);

export default defineConfig({ test: { include: ["src/**/*.test.ts"], testTimeout: 60_000, hookTimeout: 60_000 } });
