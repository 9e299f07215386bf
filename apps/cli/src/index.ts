import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Command } from "commander";
import { loginCommand, whoamiCommand } from "./commands/auth.js";
import { completionCommand } from "./commands/completion.js";
import { contactsCommand } from "./commands/contacts.js";
import { conversationsCommand } from "./commands/conversations.js";
import { channelsCommand, customFieldsCommand, tagsCommand, teamsCommand, usersCommand } from "./commands/directory.js";
import { listenCommand } from "./commands/listen.js";
import { attachmentsCommand, messagesCommand, uploadsCommand } from "./commands/messages.js";
import { eventsCommand, webhooksCommand } from "./commands/webhooks.js";
import { reportError } from "./errors.js";

/** The `parley` program; every resource is a command group in ./commands. */
export function createProgram(): Command {
  const program = new Command("parley")
    .description("Parley from the command line")
    .version("0.1.0")
    .option("--api-key <key>", "API key (default: PARLEY_API_KEY, then the profile)")
    .option("--base-url <url>", "API base URL (default: PARLEY_BASE_URL, then the profile)")
    .option("--profile <name>", "profile saved by parley login")
    .option("--json", "print the raw API objects as JSON");
  for (const command of [
    loginCommand(),
    whoamiCommand(),
    contactsCommand(),
    conversationsCommand(),
    messagesCommand(),
    uploadsCommand(),
    attachmentsCommand(),
    channelsCommand(),
    usersCommand(),
    teamsCommand(),
    tagsCommand(),
    customFieldsCommand(),
    webhooksCommand(),
    eventsCommand(),
    listenCommand(),
    completionCommand(() => program),
  ])
    program.addCommand(command);
  // addCommand does not pass settings down: every command must throw (exit 2 for usage) instead of exiting 1.
  const configure = (command: Command): void => {
    command.exitOverride().showHelpAfterError();
    for (const sub of command.commands) configure(sub);
  };
  configure(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  try {
    await createProgram().parseAsync(argv);
    return 0;
  } catch (error) {
    return reportError(error);
  }
}

function isEntry(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  // The bin is usually a symlink (node_modules/.bin/parley), so compare resolved paths.
  return realpathSync(script) === fileURLToPath(import.meta.url);
}

if (isEntry()) {
  // `parley contacts list | head -1` closes the pipe early; that is the reader's choice, not a failure.
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(0);
    throw error;
  });
  process.exitCode = await main(process.argv);
}
