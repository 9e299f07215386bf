import { createSandboxAdapter, type SandboxOptions } from "../sandbox/adapter.js";
import { instagram } from "./definition.js";

/**
 * The sandbox applies WhatsApp's window only (decisions.md); the live adapter enforces
 * Instagram's 24-hour window (`meta/session-window.ts`).
 */
export function instagramSandbox(options: SandboxOptions) {
  return createSandboxAdapter(instagram, options);
}
