import { register } from "node:module";

// `node --import ./register.mjs app.js`: logs the OpenTelemetry modules the app loads (hooks.mjs).
register("./hooks.mjs", import.meta.url);
