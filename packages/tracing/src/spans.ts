import {
  type Attributes,
  type Context,
  context,
  INVALID_SPAN_CONTEXT,
  isSpanContextValid,
  type Link,
  propagation,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";

/** Every span of Parley comes from this tracer (a no-op until startTracing registers the SDK). */
export const tracer = trace.getTracer("parley");

let enabled = false;

/** Whether startTracing registered the SDK; when not, the helpers below do nothing at all. */
export function tracingEnabled(): boolean {
  return enabled;
}

/** Set by startTracing (sdk.ts) only. */
export function setTracingEnabled(value: boolean): void {
  enabled = value;
}

const NOOP_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

export type { Attributes, Span };

export interface SpanOptions {
  /**
   * A W3C `traceparent` stored with a row (a message's outbox row, an event): the span
   * continues that trace. Its parent is the active span when that one already belongs to
   * the same trace, else the stored span itself (the active span, of another trace, is
   * then linked).
   */
  traceparent?: string | null | undefined;
  /** Further stored `traceparent`s the span serves (a job carrying the work of several traces): linked. */
  links?: readonly (string | null | undefined)[];
  kind?: "internal" | "client" | "consumer";
  /** A function when they take work to compute: it is then only called with tracing on. */
  attributes?: Attributes | (() => Attributes);
}

const KINDS = { internal: SpanKind.INTERNAL, client: SpanKind.CLIENT, consumer: SpanKind.CONSUMER } as const;

/**
 * Runs `fn` in a span named `name` (a fixed name: never an id, an address or a text), ended
 * when `fn` settles; a throw marks it failed with the error's class name only (an error's
 * message may quote a provider's answer). Off, `fn` runs as is, with a span that records nothing.
 */
export async function withSpan<T>(name: string, options: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  if (!enabled) return fn(NOOP_SPAN);
  const { parent, links } = parentOf(options.traceparent);
  for (const traceparent of options.links ?? []) {
    const linked = spanContextOf(traceparent);
    if (linked) links.push({ context: linked });
  }
  const attributes = typeof options.attributes === "function" ? options.attributes() : (options.attributes ?? {});
  const spanOptions = { kind: KINDS[options.kind ?? "internal"], attributes, links };
  return tracer.startActiveSpan(name, spanOptions, parent, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      markFailed(span, error instanceof Error ? error.name : "Error");
      throw error;
    } finally {
      span.end();
    }
  });
}

/** Marks a span failed with a short reason: a code or a class name, never a provider's or a person's text. */
export function markFailed(span: Span, reason: string): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: reason });
}

/** The active span as a W3C `traceparent`, to store with a row a later job continues; null when tracing is off. */
export function currentTraceparent(): string | null {
  if (!enabled) return null;
  const spanContext = trace.getActiveSpan()?.spanContext();
  if (!spanContext || !isSpanContextValid(spanContext)) return null;
  const flags = spanContext.traceFlags.toString(16).padStart(2, "0");
  return `00-${spanContext.traceId}-${spanContext.spanId}-${flags}`;
}

/**
 * The headers of an outgoing HTTP request (a provider's API, a webhook) with the active
 * span's W3C `traceparent` (and `tracestate`) set by the registered propagator, so a
 * receiver that traces joins the sender's trace. With tracing off: `headers` as they are.
 */
export function withTraceContext(headers: Record<string, string>): Record<string, string> {
  if (!enabled) return headers;
  const carrier = { ...headers };
  propagation.inject(context.active(), carrier);
  return carrier;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A stored `traceparent` as a remote span context; undefined when it is malformed or absent. */
export function spanContextOf(traceparent: string | null | undefined): SpanContext | undefined {
  const match = traceparent ? TRACEPARENT.exec(traceparent) : null;
  if (!match?.[1] || !match[2] || !match[3]) return undefined;
  const spanContext = {
    traceId: match[1],
    spanId: match[2],
    traceFlags: Number.parseInt(match[3], 16),
    isRemote: true,
  };
  return isSpanContextValid(spanContext) ? spanContext : undefined;
}

/** The host of a URL (never its path, query or credentials), for `server.address`. */
export function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return "invalid";
  }
}

function parentOf(traceparent: string | null | undefined): { parent: Context; links: Link[] } {
  const active = context.active();
  const stored = spanContextOf(traceparent);
  if (!stored) return { parent: active, links: [] };
  const activeSpan = trace.getSpanContext(active);
  if (activeSpan && isSpanContextValid(activeSpan) && activeSpan.traceId === stored.traceId) {
    return { parent: active, links: [] };
  }
  const links = activeSpan && isSpanContextValid(activeSpan) ? [{ context: activeSpan }] : [];
  return { parent: trace.setSpanContext(active, stored), links };
}
