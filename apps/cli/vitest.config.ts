import { setPriority } from "node:os";
import { defineConfig } from "vitest/config";

// `pnpm test` runs every package's suite at once, and the API's is the longest on a machine
// of two cores: this one (package installs, CLI processes, each a process start) yields the
// CPU to it and takes what it leaves, at a nice of 5. What it starts inherits the priority.
try {
  setPriority(5);
} catch {
  // Not allowed here (some containers): the suite runs at the usual priority.
}

export default defineConfig({
  test: { include: ["src/**/*.test.ts", "test/**/*.test.ts"], testTimeout: 120_000, hookTimeout: 120_000 },
});
