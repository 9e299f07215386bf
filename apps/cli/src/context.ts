import { Parley } from "@parley/sdk";
import type { Command } from "commander";
import { readConfig } from "./config.js";
import { UsageError } from "./errors.js";
import { type Column, type Mode, outputMode, printList, printObject } from "./output.js";

export type Options = Record<string, unknown>;

export interface Context {
  /** Built on first use, so `login` and `completion` need no key. */
  client(): Promise<Parley>;
  mode: Mode;
  options: Options;
  object(value: unknown): void;
  list<T>(pages: ListSource<T>, columns: Column[]): Promise<void>;
}

/** What the SDK's list calls return: awaitable for the first page, iterable for all. */
export interface ListSource<T>
  extends PromiseLike<{ data: T[]; hasMore: boolean; nextCursor: string | null }>,
    AsyncIterable<T> {}

export function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

export function int(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1) throw new UsageError(`${name} must be a positive integer`);
  return number;
}

/** `--data '{"a":1}'` merged under the explicit flags, for fields without a flag of their own. */
export function body(options: Options, fields: Record<string, unknown>): Record<string, unknown> {
  let extra: Record<string, unknown> = {};
  const data = str(options.data);
  if (data !== undefined) {
    try {
      const parsed: unknown = JSON.parse(data);
      if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error();
      extra = parsed as Record<string, unknown>;
    } catch {
      throw new UsageError("--data must be a JSON object");
    }
  }
  const explicit = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
  return { ...extra, ...explicit };
}

/** Page size and auto-pagination flags of every list command. */
export function listQuery(options: Options): { limit?: number } {
  const limit = int(options.limit, "--limit");
  return limit === undefined ? {} : { limit };
}

async function resolveClient(globals: Options): Promise<Parley> {
  const explicitProfile = str(globals.profile);
  const profileName = explicitProfile ?? process.env.PARLEY_PROFILE ?? "default";
  const profile = (await readConfig()).profiles[profileName];
  if (explicitProfile && !profile)
    throw new UsageError(`no profile "${explicitProfile}"; run parley login --profile ${explicitProfile}`);
  // A flag beats a named profile, which beats the environment, which beats the default profile.
  const apiKey =
    str(globals.apiKey) ??
    (explicitProfile ? profile?.apiKey : undefined) ??
    process.env.PARLEY_API_KEY ??
    profile?.apiKey;
  if (!apiKey) throw new UsageError("no API key: pass --api-key, set PARLEY_API_KEY or run parley login");
  const baseUrl =
    str(globals.baseUrl) ??
    (explicitProfile ? profile?.baseUrl : undefined) ??
    process.env.PARLEY_BASE_URL ??
    profile?.baseUrl;
  return new Parley({ apiKey, ...(baseUrl ? { baseUrl } : {}) });
}

function contextFor(command: Command): Context {
  const options = command.optsWithGlobals<Options>();
  const mode = outputMode(options.json === true);
  let client: Promise<Parley> | undefined;
  return {
    client: () => {
      client ??= resolveClient(options);
      return client;
    },
    mode,
    options,
    object: (value) => printObject(mode, value),
    list: async (pages, columns) => {
      if (options.all === true) {
        const items = [];
        for await (const item of pages) items.push(item);
        printList(mode, items, columns);
        return;
      }
      const page = await pages;
      printList(mode, page.data, columns, page.hasMore ? page.nextCursor : null);
    },
  };
}

/** Wraps an action: gives it the context and its positional arguments; errors go to the top-level handler. */
export function run(handler: (ctx: Context, ...args: string[]) => Promise<void>) {
  return async (...received: unknown[]): Promise<void> => {
    const command = received.at(-1) as Command;
    const args = received.slice(0, -2).map((arg) => (Array.isArray(arg) ? arg.join(" ") : String(arg ?? "")));
    await handler(contextFor(command), ...args);
  };
}

export function example(command: Command, text: string): Command {
  return command.addHelpText("after", `\nExample:\n  ${text}\n`);
}

export function listOptions(command: Command): Command {
  return command.option("--limit <n>", "page size (1 to 100)").option("--all", "fetch every page");
}

/** The body type of an SDK method; the server validates the fields, so the CLI only shapes them. */
export type BodyOf<F> = F extends (first: infer B, ...rest: never[]) => unknown ? B : never;
export type SecondOf<F> = F extends (first: never, second: infer B, ...rest: never[]) => unknown ? B : never;
