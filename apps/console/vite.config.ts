import { defineConfig } from "vite";

/**
 * Static files the API serves at /console (apps/api/src/http/console.ts): no inline script
 * or style, nothing from another origin, so its Content-Security-Policy can say `'self'`.
 */
export default defineConfig({
  base: "/console/",
  build: {
    outDir: "dist",
    target: "es2022",
    // The budget is 150 kB of JavaScript gzipped: one bundle, no module preload polyfill (inline).
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
  },
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
});
