import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { findFreePort } from "@parley/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestOrganization, useTestApi } from "./harness.js";
import { apiDist, type StartedProcess, startUntil } from "./start-processes.js";

/**
 * Tracing costs nothing when off: `pnpm start` (the API and its worker, dist/main.js) with
 * no OTEL_* variable never loads an OpenTelemetry SDK module, even while it serves a
 * write; with an OTLP endpoint it does (which shows the module log sees them).
 */
const api = useTestApi({}, { ownDatabase: true });
const register = path.resolve(import.meta.dirname, "module-log/register.mjs");
const SDK_MODULE = /^@opentelemetry\/(?!api$)/;
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "parley-tracing-off-"));
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

/** Starts dist/main.js on the file's database, creates a contact through it, stops it; the OpenTelemetry modules it resolved. */
async function modulesLoaded(name: string, otel: Record<string, string>): Promise<string[]> {
  const log = path.join(scratch, `${name}.log`);
  const port = await findFreePort();
  const started: StartedProcess = await startUntil(
    path.join(apiDist, "main.js"),
    {
      DATABASE_URL: api.databaseUrl,
      PORT: String(port),
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      NODE_OPTIONS: `--import=${register}`,
      PARLEY_MODULE_LOG: log,
      OTEL_EXPORTER_OTLP_ENDPOINT: "",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "",
      ...otel,
    },
    /Parley is listening/,
  );
  try {
    const org = await createTestOrganization(api);
    const response = await fetch(`http://127.0.0.1:${port}/v1/contacts`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${org.test}`,
        "content-type": "application/json",
        traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      },
      body: JSON.stringify({ name: "Ada" }),
    });
    expect(response.status).toBe(201);
  } finally {
    started.child.kill("SIGTERM");
    expect(await started.exited, started.output()).toBe(0);
  }
  const text = await readFile(log, "utf8").catch(() => "");
  return [...new Set(text.split("\n").filter(Boolean))];
}

describe("tracing off", () => {
  it("loads no OpenTelemetry SDK module when no OTLP endpoint is set", async () => {
    const loaded = await modulesLoaded("off", {});
    expect(loaded.filter((specifier) => SDK_MODULE.test(specifier))).toEqual([]);
  });

  it("loads the SDK and the OTLP exporter once an endpoint is set", async () => {
    // Nothing listens there: the exporter's failures do not concern the API.
    const loaded = await modulesLoaded("on", { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9" });
    expect(loaded).toEqual(
      expect.arrayContaining(["@opentelemetry/sdk-trace", "@opentelemetry/exporter-trace-otlp-http"]),
    );
  });
});
