import { withSpan } from "@parley/tracing";
import type { Task } from "graphile-worker";

/**
 * Runs each job of a task in a span `job <task>`. A payload that carries a `traceparent`
 * (a delivery relayed from a send's outbox row) continues that trace, so a send's trace
 * shows its delivery; one that carries `traceparents` (work of several sends) continues
 * the first and links the others; other jobs start a trace of their own. Retries of a job
 * are spans of the same trace. Off, the task runs as is.
 */
export function withJobSpan(identifier: string, task: Task): Task {
  return (payload, helpers) =>
    withSpan(
      `job ${identifier}`,
      {
        kind: "consumer",
        ...traceparentsOf(payload),
        attributes: () => ({
          "parley.job.task": identifier,
          "parley.job.id": helpers.job.id,
          "parley.job.attempt": helpers.job.attempts,
        }),
      },
      async () => task(payload, helpers),
    );
}

function traceparentsOf(payload: unknown): { traceparent?: string; links?: string[] } {
  if (typeof payload !== "object" || payload === null) return {};
  if ("traceparent" in payload && typeof payload.traceparent === "string") return { traceparent: payload.traceparent };
  if (!("traceparents" in payload) || !Array.isArray(payload.traceparents)) return {};
  const [first, ...others] = payload.traceparents.filter((value): value is string => typeof value === "string");
  return first ? { traceparent: first, links: others } : {};
}
