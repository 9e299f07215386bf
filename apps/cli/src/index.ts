import { Command } from "commander";

/** The `parley` command; its resource commands arrive with the CLI issue, built on @parley/sdk. */
export function createProgram(): Command {
  return new Command("parley").description("Parley from the command line").version("0.1.0");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await createProgram().parseAsync(process.argv);
}
