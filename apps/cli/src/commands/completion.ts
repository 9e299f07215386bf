import { Command } from "commander";
import { example } from "../context.js";
import { UsageError } from "../errors.js";

/** Every command path with its subcommands and options, read from the program itself so it never drifts. */
function tree(command: Command, prefix: string, into: Map<string, string[]>): void {
  const words = [
    ...command.commands.map((sub) => sub.name()),
    ...command.options.flatMap((option) => [option.long, option.short].filter((flag) => flag !== undefined)),
  ];
  into.set(prefix, words);
  for (const sub of command.commands) tree(sub, prefix ? `${prefix} ${sub.name()}` : sub.name(), into);
}

function bash(entries: Map<string, string[]>): string {
  const cases = [...entries].map(([path, words]) => `    "${path}") words="${words.join(" ")}" ;;`).join("\n");
  return `# parley bash completion: eval "$(parley completion bash)"
_parley() {
  local cur path="" i w words
  cur="\${COMP_WORDS[COMP_CWORD]}"
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    [[ "$w" == -* ]] && continue
    case "$path\${path:+ }$w" in
${[...entries.keys()].map((path) => `      "${path}") path="$path\${path:+ }$w" ;;`).join("\n")}
    esac
  done
  case "$path" in
${cases}
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -F _parley parley
`;
}

function zsh(entries: Map<string, string[]>): string {
  return `#compdef parley
# parley zsh completion: eval "$(parley completion zsh)"
autoload -U bashcompinit && bashcompinit
${bash(entries)}`;
}

export function completionCommand(program: () => Command): Command {
  return example(
    new Command("completion")
      .description("Print a shell completion script (bash or zsh)")
      .argument("<shell>", "bash or zsh")
      .action((shell: string) => {
        const entries = new Map<string, string[]>();
        tree(program(), "", entries);
        if (shell === "bash") process.stdout.write(bash(entries));
        else if (shell === "zsh") process.stdout.write(zsh(entries));
        else throw new UsageError(`unknown shell "${shell}": use bash or zsh`);
      }),
    'eval "$(parley completion bash)"   # or add it to ~/.bashrc',
  );
}
