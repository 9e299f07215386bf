export { createApp } from "./app.js";
export type { Config } from "./config.js";
export { loadConfig } from "./config.js";
export type { AppContext } from "./context.js";
export { createAppContext, startApi } from "./server.js";
