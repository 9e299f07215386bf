import { StartupError } from "@parley/db";
import { parseSecretsKey } from "../secrets/secret-box.js";

/** A problem a configuration schema found: the variable (`path[0]`) and what is wrong. */
export interface ConfigIssue {
  path: readonly PropertyKey[];
  message: string;
}

type Env = Record<string, string | undefined>;

// Their values are never echoed: a typo in a key or a URL's password must not land in a log.
const SECRET_VARIABLE = /KEY|SECRET|PASSWORD|TOKEN|DATABASE_URL/;

/**
 * Every problem of a configuration at once (the schema's and the checks no single variable
 * can make), as one `StartupError` line naming each variable; nothing when it is sound.
 */
export function assertConfigValid(issues: readonly ConfigIssue[], env: Env, label = "configuration"): void {
  const problems = [...issues.map((issue) => describeIssue(issue, env)), ...crossVariableProblems(env)].filter(
    (problem, index, all) => all.indexOf(problem) === index,
  );
  if (problems.length === 0) return;
  throw new StartupError(
    `Invalid ${label}: ${problems.join("; ")}. Correct ${problems.length === 1 ? "it" : "them"} and start again (README, Configuration).`,
  );
}

function describeIssue(issue: ConfigIssue, env: Env): string {
  const name = String(issue.path[0] ?? "configuration");
  const message = issue.message.charAt(0).toLowerCase() + issue.message.slice(1);
  return `${name}${shownValue(name, env)}: ${message}`;
}

function shownValue(name: string, env: Env): string {
  const value = env[name];
  if (value === undefined) return "";
  if (SECRET_VARIABLE.test(name)) return " (value hidden)";
  return `=${JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}...` : value)}`;
}

/** What the API and the worker both check before anything else: production's key, the database URL. */
function crossVariableProblems(env: Env): string[] {
  const problems: string[] = [];
  if (env.NODE_ENV === "production" && !env.PARLEY_SECRETS_KEY) {
    problems.push(
      "PARLEY_SECRETS_KEY is required when NODE_ENV=production (32 bytes as hex or base64: openssl rand -hex 32)",
    );
  }
  if (env.PARLEY_SECRETS_KEY) {
    try {
      parseSecretsKey(env.PARLEY_SECRETS_KEY);
    } catch {
      problems.push("PARLEY_SECRETS_KEY (value hidden): must be 32 bytes, as 64 hex characters or base64");
    }
  }
  if (env.PARLEY_SECRETS_KEY_PREVIOUS) {
    try {
      parseSecretsKey(env.PARLEY_SECRETS_KEY_PREVIOUS, "PARLEY_SECRETS_KEY_PREVIOUS");
    } catch {
      problems.push("PARLEY_SECRETS_KEY_PREVIOUS (value hidden): must be 32 bytes, as 64 hex characters or base64");
    }
  }
  if (env.DATABASE_URL !== undefined && env.DATABASE_URL !== "" && !isPostgresUrl(env.DATABASE_URL)) {
    problems.push("DATABASE_URL (value hidden): must be a PostgreSQL URL, postgres://user:password@host:5432/database");
  }
  return problems;
}

function isPostgresUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === "postgres:" || url.protocol === "postgresql:") && url.hostname !== "";
  } catch {
    return false;
  }
}
