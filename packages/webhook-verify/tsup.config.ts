import { defineConfig } from "tsup";

// Published as ESM and CJS with types. The webhook bodies' types are generated into
// src/events.generated.ts from the catalogue (`pnpm run docs`), so the package depends on nothing.
export default defineConfig({
  entry: ["src/index.ts"],
  format: ["esm", "cjs"],
  target: "es2022",
  platform: "neutral",
  // Declarations are `build:types` (turbo): the JavaScript the API and its tests run is not
  // held up by them, and they are built where they are published and checked.
  dts: false,
  clean: true,
  sourcemap: true,
});
