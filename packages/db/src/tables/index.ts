export * from "./columns.js";
export * from "./contacts.js";
export * from "./conversations.js";
export * from "./messages.js";
export * from "./organizations.js";
export * from "./platform.js";
export * from "./webchat.js";
export * from "./webhooks.js";
