import { defineConfig } from "tsup";

// The SDK stays a separate import (`import()` in sdk.ts): it is loaded only when tracing is on.
export default defineConfig({ entry: ["src/index.ts"], format: "esm", target: "node20", clean: true, sourcemap: true });
