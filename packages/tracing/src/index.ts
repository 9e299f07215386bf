export { type TracingConfig, tracingConfigFields } from "./config.js";
export { startTracing, type Tracing, type TracingOptions } from "./sdk.js";
export {
  type Attributes,
  currentTraceparent,
  hostOf,
  markFailed,
  type Span,
  type SpanOptions,
  spanContextOf,
  tracer,
  tracingEnabled,
  withSpan,
  withTraceContext,
} from "./spans.js";
