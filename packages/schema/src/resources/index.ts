export * from "./contact.js";
export * from "./custom-field.js";
export * from "./event.js";
export * from "./tag.js";
