export * from "./channel.js";
export * from "./contact.js";
export * from "./conversation.js";
export * from "./custom-field.js";
export * from "./event.js";
export * from "./tag.js";
export * from "./team.js";
