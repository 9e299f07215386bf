import { defineConfig } from "tsup";

// Published: ESM and CommonJS with declarations. `runtime` is the zod-free entry clients
// bundle; `event-types` the event names alone (the webhook verifier inlines them).
export default defineConfig({
  entry: { index: "src/index.ts", runtime: "src/runtime.ts", "event-types": "src/resources/event-types.ts" },
  format: ["esm", "cjs"],
  target: "es2022",
  dts: true,
  clean: true,
  sourcemap: true,
});
