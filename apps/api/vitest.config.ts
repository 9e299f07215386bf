import { configDefaults, defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

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

/**
 * The files that take longest (most of them start processes: servers, admin commands,
 * browsers, a PostgreSQL 14), started first. Without a duration cache (a fresh clone, CI)
 * vitest starts the larger files first, and the 60-second PostgreSQL 14 file, a small one,
 * ran last with the other worker idle beside it.
 */
const LONGEST_FIRST = [
  "test/start-and-admin.test.ts",
  "test/postgres-14.test.ts",
  "test/hostile/fuzz.test.ts",
  "test/console-browser.test.ts",
  "test/start-failures.test.ts",
  "test/webchat-panel.test.ts",
  "test/delivery-workers.test.ts",
  "test/webchat-widget-browser.test.ts",
  "test/sms-vonage.test.ts",
  "test/sms-twilio.test.ts",
  "test/first-run-private-dir.test.ts",
];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const index = LONGEST_FIRST.findIndex((file) => spec.moduleId.endsWith(file));
      return index === -1 ? LONGEST_FIRST.length : index;
    };
    const groupOf = (spec: TestSpecification) => spec.project.config.sequence.groupOrder;
    return sorted
      .map((spec, position) => ({ spec, position }))
      .sort((a, b) => groupOf(a.spec) - groupOf(b.spec) || rank(a.spec) - rank(b.spec) || a.position - b.position)
      .map(({ spec }) => spec);
  }
}

export default defineConfig({
  // Workspace packages resolve to their TypeScript sources: no rebuild between edits.
  resolve: { conditions: ["source"] },
  ssr: { resolve: { conditions: ["source"] } },
  test: {
    globalSetup: ["../../packages/db/src/vitest-global-setup.ts"],
    sequence: { sequencer: LongestFirst },
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
          // the suite to 13 minutes on a slow machine.
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
