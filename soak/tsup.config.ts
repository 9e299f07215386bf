import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/run.ts"],
  format: "esm",
  target: "node20",
  clean: true,
  sourcemap: true,
  // The providers' simulators are test code of @parley/channels, kept out of its build:
  // bundled here from their TypeScript sources.
  noExternal: ["@parley/channels"],
  esbuildOptions(options) {
    options.conditions = ["source"];
  },
});
