/**
 * The fault tests run twice over: CI-sized in `pnpm test`, full-sized in `pnpm test:faults`
 * (vitest.faults.config.ts sets `PARLEY_FAULTS=full`). Same code, sizes from here.
 */
export const FULL = process.env.PARLEY_FAULTS === "full";

/** `ci` in `pnpm test`, `full` in `pnpm test:faults`. */
export function sized(ci: number, full: number): number {
  return FULL ? full : ci;
}
