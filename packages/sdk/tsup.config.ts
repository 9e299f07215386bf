import { defineConfig } from "tsup";

// ESM and CJS with declarations. `index` imports nothing of Node's (browsers, Deno, Bun,
// edge runtimes); `node` adds uploads from a file path and is what Node resolves (the
// `node` export condition), so that `import { Parley } from "@parley/sdk"` takes paths there.
export default defineConfig({
  entry: ["src/index.ts", "src/node.ts"],
  format: ["esm", "cjs"],
  target: "es2022",
  platform: "neutral",
  external: ["node:fs"],
  removeNodeProtocol: false,
  // Declarations are `build:types` (turbo): the JavaScript the API and its tests run is not
  // held up by them, and they are built where they are published and checked.
  dts: false,
  clean: true,
  sourcemap: true,
});
