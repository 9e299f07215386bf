import { context, propagation, trace } from "@opentelemetry/api";
import type { SpanExporter } from "@opentelemetry/sdk-trace";
import type { TracingConfig } from "./config.js";
import { setTracingEnabled, tracingEnabled } from "./spans.js";

export interface Tracing {
  serviceName: string;
  /**
   * Exports the spans still buffered (for at most SHUTDOWN_EXPORT_MS), then unregisters the
   * SDK. Never rejects: a collector that is down must not fail a graceful stop; its error
   * is handed to `onError`.
   */
  shutdown(onError?: (error: unknown) => void): Promise<void>;
}

/** How long a stop waits for the last spans to reach the collector. */
export const SHUTDOWN_EXPORT_MS = 3_000;

export interface TracingOptions {
  /** `service.name` when OTEL_SERVICE_NAME is unset. */
  defaultServiceName: string;
  /** Tests: spans go to this exporter (e.g. the SDK's InMemorySpanExporter), one by one, instead of OTLP. */
  exporter?: SpanExporter;
}

/**
 * Registers the OpenTelemetry SDK (tracer provider, async context, W3C propagator) when an
 * OTLP endpoint is configured, else does nothing: the SDK's modules are then never even
 * loaded (dynamic imports below), and the helpers of spans.ts stay no-ops.
 */
export async function startTracing(config: TracingConfig, options: TracingOptions): Promise<Tracing | undefined> {
  const configured = Boolean(config.OTEL_EXPORTER_OTLP_ENDPOINT || config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  if (config.OTEL_SDK_DISABLED || !(configured || options.exporter)) return undefined;
  if (tracingEnabled()) throw new Error("Tracing is already started in this process");
  const [sdk, { AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }, { resourceFromAttributes }] =
    await Promise.all([
      import("@opentelemetry/sdk-trace"),
      import("@opentelemetry/context-async-hooks"),
      import("@opentelemetry/core"),
      import("@opentelemetry/resources"),
    ]);
  const serviceName = config.OTEL_SERVICE_NAME ?? options.defaultServiceName;
  // The OTLP exporter reads its URL (and headers, timeout) from the standard variables itself.
  const processor = options.exporter
    ? new sdk.SimpleSpanProcessor({ exporter: options.exporter })
    : new sdk.BatchSpanProcessor({
        exporter: new (await import("@opentelemetry/exporter-trace-otlp-http")).OTLPTraceExporter(),
      });
  const provider = new sdk.TracerProvider({
    resource: resourceFromAttributes({ "service.name": serviceName }),
    spanProcessors: [processor],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  setTracingEnabled(true);
  return {
    serviceName,
    shutdown: async (onError) => {
      setTracingEnabled(false);
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, SHUTDOWN_EXPORT_MS).unref();
      });
      try {
        await Promise.race([provider.shutdown(), timeout]);
      } catch (error) {
        onError?.(error);
      } finally {
        clearTimeout(timer);
        trace.disable();
        propagation.disable();
        context.disable();
      }
    },
  };
}
