import { defineConfig } from "tsup";

// Published as ESM and CJS with types. The webhook bodies' types are generated into
// src/events.generated.ts from the catalogue (`pnpm run docs`), so the package depends on nothing.
export default defineConfig({
  entry: ["src/index.ts"],
  format: ["esm", "cjs"],
  target: "es2022",
  platform: "neutral",
  dts: true,
  clean: true,
  sourcemap: true,
});
