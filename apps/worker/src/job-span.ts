import { withSpan } from "@parley/tracing";
import type { Task } from "graphile-worker";

/**
 * Runs each job of a task in a span `job <task>`. A payload that carries a `traceparent`
 * (a delivery relayed from a send's outbox row) continues that trace, so a send's trace
 * shows its delivery; other jobs start a trace of their own. Retries of a job are spans
 * of the same trace. Off, the task runs as is.
 */
export function withJobSpan(identifier: string, task: Task): Task {
  return (payload, helpers) =>
    withSpan(
      `job ${identifier}`,
      {
        kind: "consumer",
        traceparent: traceparentOf(payload),
        attributes: () => ({
          "parley.job.task": identifier,
          "parley.job.id": helpers.job.id,
          "parley.job.attempt": helpers.job.attempts,
        }),
      },
      async () => task(payload, helpers),
    );
}

function traceparentOf(payload: unknown): string | undefined {
  if (typeof payload !== "object" || payload === null || !("traceparent" in payload)) return undefined;
  return typeof payload.traceparent === "string" ? payload.traceparent : undefined;
}
