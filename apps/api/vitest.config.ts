import { configDefaults, defineConfig } from "vitest/config";

/**
 * The files that judge time or CPU as it passes in their own process (a provider's pace
 * as requests arrive, the cost of a request with 1,000 channels against one, an image
 * refused at almost no CPU): another file busy on the same two cores bunches or slows
 * what they time. They run after the rest, one at a time.
 */
const TIMED = [
  "test/meta-whatsapp.test.ts",
  "test/hostile/meta-webhook-cost.test.ts",
  "test/hostile/image-limits.test.ts",
  "test/sms-twilio-pace.test.ts",
];

export default defineConfig({
  // Workspace packages resolve to their TypeScript sources: no rebuild between edits.
  resolve: { conditions: ["source"] },
  ssr: { resolve: { conditions: ["source"] } },
  test: {
    globalSetup: ["../../packages/db/src/vitest-global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: "api",
          include: ["src/**/*.test.ts", "test/**/*.test.ts"],
          // Fault tests too slow for every run: `pnpm test:faults` (vitest.faults.config.ts).
          exclude: [...configDefaults.exclude, "test/faults/**/*.slow.test.ts", ...TIMED],
          // Two files at a time: most of a file's time is spent waiting on processes,
          // PostgreSQL and browsers, and one at a time (vitest's default on two cores) took
          // the suite to 13 minutes on a slow machine. Three (2026-11-29) gained nothing in
          // CI (the suite 702 s against 698, the whole run 12m41s either way): the suites
          // beside it lost the CPU it took.
          maxWorkers: 2,
          // Files share their worker's modules: each file re-importing the server's whole
          // module graph took 275 s of a 758 s suite (32 s shared). No test changes module
          // state another relies on; each starts its own server, database and workers.
          isolate: false,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: { name: "timed", include: TIMED, maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
