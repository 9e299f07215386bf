export * from "./address-policy.js";
export * from "./attempt.js";
export * from "./envelope.js";
export * from "./schedule.js";
export * from "./send.js";
export * from "./sign.js";
