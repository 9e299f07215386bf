// Local stand-ins for the providers, speaking their documented wire formats. Tests only:
// nothing in `src/` imports this folder, and it is not part of the built package.
export * from "./meta-simulator.js";
export * from "./smtp-sink.js";
export * from "./twilio-simulator.js";
export * from "./vonage-simulator.js";
