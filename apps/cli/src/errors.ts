import { ConnectionError, ParleyError } from "@parley/sdk";
import { CommanderError } from "commander";
import { red } from "./output.js";

export const EXIT_OK = 0;
export const EXIT_API = 1;
export const EXIT_USAGE = 2;
export const EXIT_NETWORK = 3;

/** A mistake in how the command was called, found after commander's own parsing. */
export class UsageError extends Error {}

/** Prints the error on stderr and returns the exit code documented in docs/cli.md. */
export function reportError(error: unknown): number {
  const say = (text: string) => process.stderr.write(`${red("error", process.stderr)}: ${text}\n`);
  if (error instanceof CommanderError) {
    // commander has already printed its message; help and --version are not failures.
    if (
      error.code === "commander.helpDisplayed" ||
      error.code === "commander.version" ||
      error.code === "commander.help"
    )
      return EXIT_OK;
    return EXIT_USAGE;
  }
  if (error instanceof UsageError) {
    say(error.message);
    return EXIT_USAGE;
  }
  if (error instanceof ConnectionError) {
    say(`${error.code ?? "connection_error"}: ${error.message}${causeOf(error)}`);
    return EXIT_NETWORK;
  }
  if (error instanceof ParleyError) {
    if (error.status === undefined) {
      // Raised before any request (no key configured): the caller must fix the invocation.
      say(error.message);
      return EXIT_USAGE;
    }
    const request = error.requestId ? ` (request ${error.requestId})` : "";
    say(`${error.code ?? "api_error"}: ${error.message}${request}`);
    for (const detail of error.details ?? []) process.stderr.write(`  ${detail.param}: ${detail.message}\n`);
    return EXIT_API;
  }
  say(error instanceof Error ? error.message : String(error));
  return EXIT_API;
}

function causeOf(error: Error): string {
  const cause = error.cause;
  return cause instanceof Error ? ` (${cause.message})` : "";
}
