import { setPriority } from "node:os";

/**
 * `pnpm test` runs every package's suite at once, and the API's is the longest on a machine
 * of two cores: the end of CI. A suite that calls this at the given nice (5 or 10) yields the
 * CPU to it and takes what it leaves; what the suite starts (package installs, processes,
 * PostgreSQL) inherits the priority. Where a container forbids it, the suite runs as usual.
 */
export function yieldCpuToTheApiSuite(nice: number): void {
  try {
    setPriority(nice);
  } catch {
    // Not allowed here: the usual priority.
  }
}
