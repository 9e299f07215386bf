export * from "./attachments/serialize.js";
export * from "./conversations/load.js";
export * from "./conversations/serialize.js";
export * from "./events/record-event.js";
export * from "./messages/delivery.js";
export * from "./messages/ingest.js";
export * from "./messages/serialize.js";
export * from "./messages/status.js";
