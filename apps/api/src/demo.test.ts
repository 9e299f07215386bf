import { createDatabaseClient, organizations } from "@parley/db";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { useTestApi } from "../test/harness.js";
import { createDemoOrganizationIfEmpty } from "./demo.js";

const api = useTestApi({}, { ownDatabase: true });

describe("the demo organization", () => {
  it("is created once when several processes start together on an empty database, and never again", async () => {
    // A client each, connected before they start, as processes starting together.
    const processes = Array.from({ length: 4 }, () => createDatabaseClient(api.databaseUrl, { max: 1 }));
    try {
      await Promise.all(processes.map((client) => client.open()));
      const created = await Promise.all(processes.map((client) => createDemoOrganizationIfEmpty(client.db)));
      expect(created.filter((demo) => demo !== undefined)).toHaveLength(1);
    } finally {
      await Promise.all(processes.map((client) => client.close()));
    }
    const [row] = await api.context.db.select({ count: sql<number>`count(*)::int` }).from(organizations);
    expect(row?.count).toBe(1);
    expect(await createDemoOrganizationIfEmpty(api.context.db)).toBeUndefined();
  });
});
