export * from "./attachments/serialize.js";
export * from "./conversations/serialize.js";
export * from "./events/record-event.js";
export * from "./messages/serialize.js";
