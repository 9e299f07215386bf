import { defineConfig } from "tsup";

// Published: ESM and CommonJS with declarations. `runtime` is the zod-free entry clients
// bundle; `event-types` the event names alone (the webhook verifier inlines them).
export default defineConfig({
  entry: { index: "src/index.ts", runtime: "src/runtime.ts", "event-types": "src/resources/event-types.ts" },
  format: ["esm", "cjs"],
  target: "es2022",
  // Declarations are `build:types` (turbo): the JavaScript the API and its tests run is not
  // held up by them, and they are built where they are published and checked.
  dts: false,
  clean: true,
  sourcemap: true,
});
