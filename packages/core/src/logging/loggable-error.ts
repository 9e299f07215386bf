/**
 * drizzle's and postgres.js's errors carry the statement's parameters (a message's text,
 * a contact's email, a secret being stored): in `params: ...` inside the message and the
 * stack, and as a `parameters` field. Logs never hold them: the statement and
 * PostgreSQL's reason are what a failure needs.
 */
export function withoutQueryParameters(text: string): string {
  return text.replace(/\nparams: [^\n]*/g, "\nparams: [not logged]");
}

const UNLOGGED_FIELDS = new Set(["params", "parameters", "args", "types"]);
const MAX_CAUSE_DEPTH = 5;

/** An error as a log line may show it (pino's `err` serializer): type, message, stack, code, cause. */
export function loggableError(error: unknown, depth = 0): unknown {
  if (!(error instanceof Error)) return typeof error === "string" ? withoutQueryParameters(error) : error;
  const logged: Record<string, unknown> = {
    type: error.constructor.name,
    message: withoutQueryParameters(error.message),
    stack: error.stack === undefined ? undefined : withoutQueryParameters(error.stack),
  };
  for (const [name, value] of Object.entries(error)) {
    if (UNLOGGED_FIELDS.has(name) || name === "cause") continue;
    logged[name] = typeof value === "string" ? withoutQueryParameters(value) : value;
  }
  if (error.cause !== undefined && depth < MAX_CAUSE_DEPTH) logged.cause = loggableError(error.cause, depth + 1);
  return logged;
}
