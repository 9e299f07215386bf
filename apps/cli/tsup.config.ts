import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/index.ts"],
  format: "esm",
  target: "node20",
  clean: true,
  sourcemap: true,
  // The built file is the `parley` bin, run directly by the shell.
  banner: { js: "#!/usr/bin/env node" },
});
