import { defineConfig } from "tsup";

// Published as ESM and CJS with types; scripts/inline-event-types.mjs then writes the
// catalogue's event types into the declarations, so the package depends on nothing.
export default defineConfig({
  entry: ["src/index.ts"],
  format: ["esm", "cjs"],
  target: "es2022",
  platform: "neutral",
  dts: true,
  clean: true,
  sourcemap: true,
});
