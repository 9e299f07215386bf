import { parseArgs } from "node:util";
import {
  ChannelProviderError,
  CredentialCheckError,
  channelDefinition,
  checkCredentials,
  liveProviderOf,
  liveProvidersOf,
} from "@parley/channels";
import { loadSecretBox, resealSecrets, startupFailureLine } from "@parley/core";
import { createDatabaseClient, type Database, teams, users } from "@parley/db";
import {
  type ChannelType,
  channelType,
  channelTypes,
  type Environment,
  environment,
  type Scope,
  scopeSchema,
} from "@parley/schema";
import { parseWorkerConfig, smsProviderOptionsFrom } from "@parley/worker/config";
import { eq } from "drizzle-orm";
import { z } from "zod";
import {
  ChannelNotFoundError,
  ChannelStateError,
  disconnectChannel,
  reconnectChannel,
  updateChannelSettings,
} from "./channels/lifecycle.js";
import {
  ChannelAlreadyConnectedError,
  ChannelSettingsError,
  checkSettings,
  connectChannel,
} from "./channels/service.js";
import { loadConfig } from "./config.js";
import { type OpenedDatabase, openDatabase } from "./database.js";
import { createApiKey, listApiKeys, revokeApiKey } from "./organizations/api-keys.js";
import { createOrganization, createUser, organizationExists } from "./organizations/organizations.js";
import { addTeamMember } from "./teams/service.js";

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
  create-user --org ORG_ID --name NAME --email EMAIL
  add-team-member --team TEAM_ID --user USER_ID
  connect-channel --org ORG_ID --env live --type TYPE [--name NAME]
                  [--setting key=value ...] [--settings JSON]
      whatsapp:  phone_number_id, access_token, app_secret, verify_token [, business_account_id]
      messenger: page_id, access_token, app_secret, verify_token
      instagram: instagram_account_id, access_token, app_secret, verify_token
      email:     address, smtp_url (smtp[s]://user:pass@host:port) [, from_name]
      webchat:   [greeting, prechat_name, prechat_email (off|optional|required)]
      sms:       provider=twilio, account_sid, auth_token, from | messaging_service_sid
                 [, api_key_sid, api_key_secret, mms, mps, default_region]
                 provider=vonage, application_id, private_key, signature_secret, from
                 [, mps, default_region]
      secrets (tokens, app secret, smtp_url, auth_token, api_key_secret, private_key,
      signature_secret) are encrypted with PARLEY_SECRETS_KEY and never returned by the API;
      see docs/channels/
      The credentials are checked with the provider first (Meta: GET /{account id} with the
      token; SMTP: EHLO and AUTH; Twilio: the account with its credentials; Vonage: the
      private key signs a token); --no-check skips that.
  update-channel --channel CHANNEL_ID --setting key=value ... [--settings JSON] [--no-check]
      changes the given settings in place (key= removes an optional one), checked like
      connect-channel; a channel that needs attention becomes active again
  disconnect-channel --channel CHANNEL_ID [--reason TEXT]
      stops sending and receiving; the channel and its history stay readable
  reconnect-channel --channel CHANNEL_ID
  reseal-secrets
      re-seals every sealed secret under PARLEY_SECRETS_KEY (after a rotation, with the old
      key in PARLEY_SECRETS_KEY_PREVIOUS); see docs/operations.md`;

type Options = Record<string, string | boolean | string[] | undefined>;

/**
 * The provider `connect-channel` connects with: the type's only one (`--provider` may name
 * it), or, for a type with several (`sms`: Twilio or Vonage), the one `--setting provider=`
 * (or `--provider`) names, taken out of the settings (the channel's `provider` keeps it).
 */
function chosenProvider(type: ChannelType, options: Options, settings: Record<string, unknown>): string {
  const choices = liveProvidersOf(type);
  const option = typeof options.provider === "string" ? options.provider : undefined;
  if (choices.length <= 1) {
    const only = choices[0] ?? "";
    if (option !== undefined && option !== only) {
      throw new AdminError("invalid_option", `--provider for ${type} must be ${only}`);
    }
    return only;
  }
  const setting = settings.provider;
  delete settings.provider;
  if (setting !== undefined && option !== undefined && setting !== option) {
    throw new AdminError("invalid_option", `--provider ${option} and --setting provider=${String(setting)} differ`);
  }
  try {
    const named = option ?? (typeof setting === "string" ? setting : undefined);
    return liveProviderOf(type, named)?.provider ?? "";
  } catch (error) {
    if (error instanceof ChannelProviderError) throw new AdminError("invalid_option", error.message);
    throw error;
  }
}

/** `--settings '{"k":"v"}'` and any number of `--setting key=value`, the latter winning. */
function parseSettings(options: Options): Record<string, unknown> {
  let settings: Record<string, unknown> = {};
  if (typeof options.settings === "string") {
    try {
      const parsed: unknown = JSON.parse(options.settings);
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("not an object");
      settings = parsed as Record<string, unknown>;
    } catch {
      throw new AdminError("invalid_option", "--settings must be a JSON object");
    }
  }
  const pairs = Array.isArray(options.setting) ? options.setting : [];
  for (const pair of pairs) {
    const separator = pair.indexOf("=");
    if (separator < 1) throw new AdminError("invalid_option", `--setting must be key=value, got '${pair}'`);
    settings[pair.slice(0, separator)] = pair.slice(separator + 1);
  }
  return settings;
}
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

function parseScopes(value: Options[string]): Scope[] | undefined {
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

/**
 * The providers as the worker reaches them (META_GRAPH_BASE_URL, TWILIO_API_BASE_URL,
 * VONAGE_API_BASE_URL, ...): the check asks the same place.
 */
function credentialCheckOptions() {
  const { config, issues } = parseWorkerConfig(process.env);
  if (!config) {
    const names = issues.map((issue) => issue.path.join(".")).join(", ");
    throw new AdminError("invalid_option", `The worker configuration is invalid: ${names}`);
  }
  return {
    meta: {
      graphBaseUrl: config.META_GRAPH_BASE_URL.replace(/\/+$/, ""),
      apiVersion: config.META_GRAPH_API_VERSION,
      timeoutMs: config.META_TIMEOUT_MS,
    },
    twilio: smsProviderOptionsFrom(config).twilio,
  };
}

/** The provider's word on the settings before they are stored, unless `--no-check`. */
async function checkWithProvider(
  options: Options,
  type: ChannelType,
  provider: string,
  settings: Record<string, unknown>,
): Promise<void> {
  if (options["no-check"] === true) return;
  try {
    await checkCredentials(type, provider, settings, credentialCheckOptions());
  } catch (error) {
    if (error instanceof CredentialCheckError) {
      throw new AdminError("credentials_rejected", `${error.message} (nothing was stored; --no-check skips the check)`);
    }
    throw error;
  }
}

/** The channel errors of the service, as the admin contract names them. */
function channelFailure(error: unknown): never {
  if (error instanceof ChannelSettingsError) throw new AdminError("invalid_option", error.message);
  if (error instanceof ChannelAlreadyConnectedError) throw new AdminError("channel_already_connected", error.message);
  if (error instanceof ChannelNotFoundError) throw new AdminError("channel_not_found", error.message);
  if (error instanceof ChannelStateError) throw new AdminError("invalid_state", error.message);
  throw error;
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
  "add-team-member": async (db, options) => {
    const teamId = required(options, "team");
    const userId = required(options, "user");
    const [team] = await db.select().from(teams).where(eq(teams.id, teamId));
    const [user] = await db.select().from(users).where(eq(users.id, userId));
    if (!team) throw new AdminError("team_not_found", `No such team: ${teamId}`);
    if (!user || user.organizationId !== team.organizationId) {
      throw new AdminError("user_not_found", `No such user in the team's organization: ${userId}`);
    }
    await addTeamMember(db, { organizationId: team.organizationId, teamId: team.id, userId: user.id });
    return { team_member: { team_id: team.id, user_id: user.id } };
  },
  "connect-channel": async (db, options) => {
    const organizationId = await requireOrganization(db, options);
    const type = channelType.safeParse(required(options, "type"));
    if (!type.success) throw new AdminError("invalid_option", `--type must be one of: ${channelTypes.join(", ")}`);
    const env = parseEnvironment(required(options, "env"));
    const settings = parseSettings(options);
    const provider = chosenProvider(type.data, options, settings);
    if (env === "test" && type.data !== "webchat") {
      throw new AdminError(
        "invalid_option",
        "The test environment sends to nobody: its channels are the sandboxes it was created with",
      );
    }
    const secretBox = await loadSecretBox(db, loadConfig());
    try {
      const live = liveProviderOf(type.data, provider);
      // Checked first (as connectChannel checks them) so the provider is asked about valid settings only.
      const checked = live && live.provider === provider ? checkSettings(live, settings) : settings;
      await checkWithProvider(options, type.data, provider, checked);
      const channel = await connectChannel(db, secretBox, {
        organizationId,
        environment: env,
        type: type.data,
        name: typeof options.name === "string" ? options.name : channelDefinition(type.data).label,
        provider,
        settings: checked,
      });
      return { channel };
    } catch (error) {
      return channelFailure(error);
    }
  },
  "update-channel": async (db, options) => {
    const channelId = required(options, "channel");
    const settings = parseSettings(options);
    const secretBox = await loadSecretBox(db, loadConfig());
    try {
      const channel = await updateChannelSettings(db, secretBox, {
        channelId,
        settings,
        ...(options["no-check"] === true
          ? {}
          : {
              check: (row: { type: ChannelType; provider: string }, merged: Record<string, unknown>) =>
                checkWithProvider(options, row.type, row.provider, merged),
            }),
      });
      return { channel };
    } catch (error) {
      return channelFailure(error);
    }
  },
  "disconnect-channel": async (db, options) => {
    const channelId = required(options, "channel");
    const reason = typeof options.reason === "string" ? options.reason : undefined;
    try {
      return { channel: await disconnectChannel(db, channelId, reason) };
    } catch (error) {
      return channelFailure(error);
    }
  },
  "reconnect-channel": async (db, options) => {
    const channelId = required(options, "channel");
    try {
      return { channel: await reconnectChannel(db, channelId) };
    } catch (error) {
      return channelFailure(error);
    }
  },
  "reseal-secrets": async (db) => {
    const report = await resealSecrets(db, await loadSecretBox(db, loadConfig()));
    if (report.unopenable > 0) {
      throw new AdminError(
        "secrets_unopenable",
        `${report.unopenable} sealed secret${report.unopenable === 1 ? "" : "s"} cannot be opened: sealed with key ${report.unopenable_key_ids.join(", ")}, ` +
          `but PARLEY_SECRETS_KEY is key ${report.key_id}: set PARLEY_SECRETS_KEY_PREVIOUS to that key and run again (${report.resealed} re-sealed meanwhile)`,
      );
    }
    return { reseal: report };
  },
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
      team: { type: "string" },
      user: { type: "string" },
      type: { type: "string" },
      provider: { type: "string" },
      setting: { type: "string", multiple: true },
      settings: { type: "string" },
      channel: { type: "string" },
      reason: { type: "string" },
      "no-check": { type: "boolean" },
    },
  });
  const name = positionals[0];
  const command = name ? commands[name] : undefined;
  if (values.help || !command) {
    process.stderr.write(`${usage}\n`);
    return values.help ? 0 : 2;
  }
  let database: OpenedDatabase;
  try {
    database = await openDatabase(loadConfig());
  } catch (error) {
    // A start that cannot work: one line (and the documented JSON), never a stack.
    const message = startupFailureLine(error);
    if (values.json) process.stdout.write(`${JSON.stringify({ error: { code: "startup_failed", message } })}\n`);
    process.stderr.write(`error: ${message}\n`);
    return 1;
  }
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
    process.stderr.write(`error: ${(error instanceof Error ? error.message : String(error)).split("\n")[0]}\n`);
    process.exit(1);
  },
);
