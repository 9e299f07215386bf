import { parseArgs } from "node:util";
import { createDatabaseClient, type Database } from "@parley/db";
import { type Environment, environment, type Scope, scopeSchema } from "@parley/schema";
import { z } from "zod";
import { loadConfig } from "./config.js";
import { openDatabase } from "./database.js";
import { createApiKey, listApiKeys, revokeApiKey } from "./organizations/api-keys.js";
import { createOrganization, createUser, organizationExists } from "./organizations/organizations.js";

/**
 * `pnpm --silent admin <command> ... --json`: what the public API cannot do. Talks to the
 * same database as `pnpm start` (joins its embedded PostgreSQL) and prints exactly one
 * JSON object on stdout.
 */
class AdminError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const usage = `Usage: pnpm --silent admin <command> [options] [--json]

Commands:
  create-org --name NAME
  create-key --org ORG_ID --env live|test [--scopes a:read,b:write]   (all scopes by default)
  revoke-key --org ORG_ID --key KEY_ID
  list-keys  --org ORG_ID
  create-user --org ORG_ID --name NAME --email EMAIL`;

type Options = Record<string, string | boolean | undefined>;
type Command = (db: Database, options: Options) => Promise<Record<string, unknown>>;

function required(options: Options, name: string): string {
  const value = options[name];
  if (typeof value !== "string" || value.length === 0) throw new AdminError("missing_option", `--${name} is required`);
  return value;
}

async function requireOrganization(db: Database, options: Options): Promise<string> {
  const id = required(options, "org");
  if (!(await organizationExists(db, id)))
    throw new AdminError("organization_not_found", `No such organization: ${id}`);
  return id;
}

function parseEnvironment(value: string): Environment {
  const result = environment.safeParse(value);
  if (!result.success) throw new AdminError("invalid_option", "--env must be live or test");
  return result.data;
}

function parseScopes(value: string | boolean | undefined): Scope[] | undefined {
  if (typeof value !== "string") return undefined;
  const names = value
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);
  const result = z.array(scopeSchema).min(1).safeParse(names);
  if (!result.success)
    throw new AdminError(
      "invalid_option",
      `--scopes must be a comma-separated list of: ${scopeSchema.options.join(", ")}`,
    );
  return result.data;
}

const commands: Record<string, Command> = {
  "create-org": async (db, options) => ({ ...(await createOrganization(db, required(options, "name"))) }),
  "create-key": async (db, options) => {
    const organizationId = await requireOrganization(db, options);
    const created = await createApiKey(db, {
      organizationId,
      environment: parseEnvironment(required(options, "env")),
      scopes: parseScopes(options.scopes),
    });
    return { key: created.key, id: created.id, environment: created.environment, scopes: created.scopes };
  },
  "revoke-key": async (db, options) => {
    const organizationId = await requireOrganization(db, options);
    const keyId = required(options, "key");
    if (!(await revokeApiKey(db, organizationId, keyId)))
      throw new AdminError("key_not_found", `No active key ${keyId}`);
    return { key: { id: keyId, revoked: true } };
  },
  "list-keys": async (db, options) => ({ keys: await listApiKeys(db, await requireOrganization(db, options)) }),
  "create-user": async (db, options) => {
    const organizationId = await requireOrganization(db, options);
    const email = required(options, "email");
    if (!z.email().safeParse(email).success) throw new AdminError("invalid_option", "--email must be an email address");
    return { user: await createUser(db, { organizationId, name: required(options, "name"), email }) };
  },
};

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      json: { type: "boolean" },
      name: { type: "string" },
      org: { type: "string" },
      env: { type: "string" },
      scopes: { type: "string" },
      key: { type: "string" },
      email: { type: "string" },
      help: { type: "boolean" },
    },
  });
  const name = positionals[0];
  const command = name ? commands[name] : undefined;
  if (values.help || !command) {
    process.stderr.write(`${usage}\n`);
    return values.help ? 0 : 2;
  }
  const config = loadConfig();
  const database = await openDatabase(config);
  const client = createDatabaseClient(database.url, { max: 2 });
  try {
    const result = await command(client.db, values);
    process.stdout.write(values.json ? `${JSON.stringify(result)}\n` : `${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof AdminError)) throw error;
    if (values.json)
      process.stdout.write(`${JSON.stringify({ error: { code: error.code, message: error.message } })}\n`);
    process.stderr.write(`error: ${error.message}\n`);
    return 1;
  } finally {
    await client.close();
    await database.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
