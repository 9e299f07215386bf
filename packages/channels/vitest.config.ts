import { defineConfig } from "vitest/config";
import { yieldCpuToTheApiSuite } from "../../scripts/test-priority.js";

yieldCpuToTheApiSuite(5);

export default defineConfig({
  resolve: { conditions: ["source"] },
  ssr: { resolve: { conditions: ["source"] } },
  test: { include: ["src/**/*.test.ts", "test/**/*.test.ts"], testTimeout: 20_000 },
});
