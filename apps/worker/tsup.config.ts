import { defineConfig } from "tsup";

export default defineConfig({
  // config.ts alone: what the API's admin command needs of the worker, without its job runner.
  entry: ["src/index.ts", "src/main.ts", "src/config.ts"],
  format: "esm",
  target: "node20",
  clean: true,
  sourcemap: true,
});
