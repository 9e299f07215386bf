import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTracing, type Tracing } from "./sdk.js";
import { currentTraceparent, spanContextOf, tracingEnabled, withSpan } from "./spans.js";

const A = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const B = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

describe("off", () => {
  it("runs the function with a span that records nothing, and has no traceparent to store", async () => {
    expect(tracingEnabled()).toBe(false);
    const result = await withSpan("job x", { traceparent: A }, async (span) => {
      expect(span.isRecording()).toBe(false);
      return currentTraceparent();
    });
    expect(result).toBeNull();
  });
});

describe("on", () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing | undefined;
  beforeAll(async () => {
    tracing = await startTracing({ OTEL_SDK_DISABLED: false }, { defaultServiceName: "parley-test", exporter });
  });
  afterAll(() => tracing?.shutdown());
  const named = (name: string) => exporter.getFinishedSpans().find((span) => span.name === name) as ReadableSpan;

  it("continues a stored traceparent, links the others, and gives its own traceparent to store", async () => {
    const stored = await withSpan("job batch", { traceparent: A, links: [B, "garbage"] }, async () =>
      currentTraceparent(),
    );
    const span = named("job batch");
    expect(span.spanContext().traceId).toBe(spanContextOf(A)?.traceId);
    expect(span.parentSpanContext?.spanId).toBe(spanContextOf(A)?.spanId);
    expect(span.links.map((link) => link.context.spanId)).toEqual([spanContextOf(B)?.spanId]);
    expect(stored).toBe(`00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`);
  });

  it("nests under the active span of the same trace, and under the stored one (linking the active) otherwise", async () => {
    await withSpan("outer", { traceparent: A }, async () => {
      await withSpan("same trace", { traceparent: A }, async () => {});
      await withSpan("other trace", { traceparent: B }, async () => {});
    });
    const outer = named("outer");
    expect(named("same trace").parentSpanContext?.spanId).toBe(outer.spanContext().spanId);
    const other = named("other trace");
    expect(other.parentSpanContext?.spanId).toBe(spanContextOf(B)?.spanId);
    expect(other.links.map((link) => link.context.spanId)).toEqual([outer.spanContext().spanId]);
  });

  it("marks a span failed with the error's class name only", async () => {
    await expect(
      withSpan("fails", {}, async () => {
        throw new TypeError("secret text from a provider");
      }),
    ).rejects.toThrow(TypeError);
    expect(named("fails").status).toEqual({ code: 2, message: "TypeError" });
  });
});
