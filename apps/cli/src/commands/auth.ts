import { createInterface } from "node:readline/promises";
import { Parley } from "@parley/sdk";
import { Command } from "commander";
import { saveProfile } from "../config.js";
import { example, run, str } from "../context.js";
import { UsageError } from "../errors.js";

async function prompt(question: string): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: process.stdin.isTTY === true });
  try {
    return (await rl.question(question)).trim();
  } finally {
    rl.close();
  }
}

export function loginCommand(): Command {
  return example(
    new Command("login")
      .description("Check an API key and save it as a profile in the config directory")
      .option("--key <key>", "the API key (default: PARLEY_API_KEY, else asked for)")
      .action(
        run(async (ctx) => {
          const o = ctx.options;
          const apiKey = str(o.key) ?? str(o.apiKey) ?? process.env.PARLEY_API_KEY ?? (await prompt("API key: "));
          if (!apiKey) throw new UsageError("no API key given");
          const baseUrl = str(o.baseUrl) ?? process.env.PARLEY_BASE_URL;
          // Verify before saving, so a typo does not become the default profile.
          const key = await new Parley({ apiKey, ...(baseUrl ? { baseUrl } : {}) }).apiKeys.current();
          const profile = str(o.profile) ?? "default";
          const file = await saveProfile(profile, { apiKey, ...(baseUrl ? { baseUrl } : {}) });
          if (ctx.mode === "json") ctx.object({ profile, file, key });
          else process.stdout.write(`saved profile ${profile} to ${file}\n`);
        }),
      ),
    "parley login --profile staging --key parley_test_... --base-url https://parley.example.com/v1",
  );
}

export function whoamiCommand(): Command {
  return example(
    new Command("whoami").description("Show the organization, environment and scopes of the key in use").action(
      run(async (ctx) => {
        const key = await (await ctx.client()).apiKeys.current();
        if (ctx.mode === "json") {
          ctx.object(key);
          return;
        }
        // What the key can reach; not even its redacted form, so the output is safe to paste anywhere.
        ctx.object({
          organization: `${key.organization.name} (${key.organization.id})`,
          environment: key.environment,
          scopes: key.scopes,
          key_id: key.id,
        });
      }),
    ),
    "parley whoami --profile staging",
  );
}
