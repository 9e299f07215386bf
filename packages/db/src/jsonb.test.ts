import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDatabaseClient, type DatabaseClient } from "./client.js";
import { asJsonb } from "./jsonb.js";
import { startTestDatabase } from "./test-database.js";

let database: { url: string; stop(): Promise<void> };
let client: DatabaseClient;
beforeAll(async () => {
  database = await startTestDatabase();
  client = createDatabaseClient(database.url, { max: 1 });
});
afterAll(async () => {
  await client?.close();
  await database?.stop();
});

describe("asJsonb", () => {
  it("orders keys as PostgreSQL's jsonb gives them back, at every depth", async () => {
    const values = [
      { zeta: 1, b: 2, aa: 3, a: 4, é: 5, z: 6, "10": 7, "9": 8, B: 9 },
      { list: [{ y: 1, x: { d: 1, c: 2 } }, "text", 3, null], nested: { b: true, a: false } },
      { "": 1, " ": 2, emoji: "🙂", "🙂": "emoji", undef: undefined },
      [{ b: 1, a: 2 }],
      "plain",
      12.5,
      null,
    ];
    for (const value of values) {
      const [row] = await client.sql<{ stored: string }[]>`select (${JSON.stringify(value)}::jsonb)::text as stored`;
      expect(JSON.stringify(asJsonb(value))).toBe(JSON.stringify(JSON.parse(row?.stored ?? "")));
    }
  });
});
