import { defineConfig } from "tsup";

// ESM and CJS with declarations; runs wherever a standard `fetch` exists (Node 18+, Deno, Bun, edge).
export default defineConfig({
  entry: ["src/index.ts"],
  format: ["esm", "cjs"],
  target: "es2022",
  dts: true,
  clean: true,
  sourcemap: true,
});
