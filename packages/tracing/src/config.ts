import { z } from "zod";

/** OpenTelemetry's rule: a variable set to the empty string counts as unset. */
function unsetWhenEmpty<T extends z.ZodType>(schema: T) {
  return z.preprocess((value) => (value === "" ? undefined : value), schema);
}

/**
 * The standard OpenTelemetry variables Parley honours (the OTLP exporter also reads its own,
 * e.g. `OTEL_EXPORTER_OTLP_HEADERS`). Tracing is on when an OTLP endpoint is set and
 * `OTEL_SDK_DISABLED` is not `true`.
 */
export const tracingConfigFields = {
  /** The collector's base URL; traces go to `<it>/v1/traces`. */
  OTEL_EXPORTER_OTLP_ENDPOINT: unsetWhenEmpty(z.url().optional()),
  /** The traces URL itself, used as given (wins over OTEL_EXPORTER_OTLP_ENDPOINT). */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: unsetWhenEmpty(z.url().optional()),
  /** `service.name` of the spans; `parley-api` for the API (and `pnpm start`), `parley-worker` for the worker. */
  OTEL_SERVICE_NAME: unsetWhenEmpty(z.string().min(1).optional()),
  OTEL_SDK_DISABLED: z
    .enum(["true", "false", "TRUE", "FALSE", ""])
    .default("false")
    .transform((value) => value.toLowerCase() === "true"),
};

export interface TracingConfig {
  OTEL_EXPORTER_OTLP_ENDPOINT?: string | undefined;
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string | undefined;
  OTEL_SERVICE_NAME?: string | undefined;
  OTEL_SDK_DISABLED: boolean;
}
