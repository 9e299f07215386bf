import path from "node:path";
import { findFreePort } from "@parley/db";
import { afterAll, describe, expect, it } from "vitest";
import { createApiKey, revokeApiKey } from "../src/organizations/api-keys.js";
import { createTestOrganization, eventually, useTestApi } from "./harness.js";
import { apiDist, type StartedProcess, startUntil } from "./start-processes.js";

/**
 * Issue 25: a key revoked while two API processes hold it in their caches is refused by
 * both within a second. Two real `node apps/api/dist/main.js` processes (no worker), on
 * this file's own database.
 */
const api = useTestApi({}, { ownDatabase: true });
const started: StartedProcess[] = [];

afterAll(async () => {
  for (const process of started) if (process.child.exitCode === null) process.child.kill("SIGTERM");
  await Promise.all(started.map((process) => process.exited));
});

async function startApiProcess(): Promise<string> {
  const port = await findFreePort();
  const process = await startUntil(
    path.join(apiDist, "main.js"),
    { DATABASE_URL: api.databaseUrl, RUN_WORKER: "false", PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "info" },
    /Parley is listening/,
  );
  started.push(process);
  return `http://127.0.0.1:${port}/v1`;
}

async function statusWith(baseUrl: string, key: string): Promise<number> {
  const response = await fetch(`${baseUrl}/contacts`, { headers: { authorization: `Bearer ${key}` } });
  await response.arrayBuffer();
  return response.status;
}

describe("revocation across API processes", () => {
  it("a key revoked while both processes hold it is refused by the other one within 1 s", async () => {
    const [one, two] = await Promise.all([startApiProcess(), startApiProcess()]);
    const org = await createTestOrganization(api);
    const extra = await createApiKey(api.context.db, { organizationId: org.id, environment: "test" });
    // Both processes know the key (held once their revocation listener is up).
    for (let i = 0; i < 5; i++) {
      expect(await statusWith(one, extra.key)).toBe(200);
      expect(await statusWith(two, extra.key)).toBe(200);
    }

    // Revoked as `pnpm admin revoke-key` does, from outside both processes.
    const revoked = performance.now();
    expect(await revokeApiKey(api.context.db, org.id, extra.id)).toBe(true);
    await Promise.all(
      [one, two].map((baseUrl) =>
        eventually(
          () => statusWith(baseUrl, extra.key),
          (status) => status === 401,
          1_000,
        ),
      ),
    );
    expect(performance.now() - revoked).toBeLessThan(1_000);
    expect(await statusWith(one, org.test)).toBe(200);
    expect(await statusWith(two, org.test)).toBe(200);
  }, 60_000);
});
