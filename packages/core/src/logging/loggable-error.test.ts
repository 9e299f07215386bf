import { createDatabaseClient, startTestDatabase } from "@parley/db";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loggableError, withoutQueryParameters } from "./loggable-error.js";

let database: { url: string; stop(): Promise<void> };
let client: ReturnType<typeof createDatabaseClient>;
beforeAll(async () => {
  database = await startTestDatabase();
  client = createDatabaseClient(database.url, { max: 1 });
}, 60_000);
afterAll(async () => {
  await client?.close();
  await database?.stop();
});

describe("loggableError", () => {
  it("keeps a failed statement and PostgreSQL's reason, never its parameters", async () => {
    const secret = "the customer's private message";
    const error = await client.db.execute(sql`select ${secret}::text, 1 / ${0}::int as broken`).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(Error);
    expect(JSON.stringify(error, Object.getOwnPropertyNames(error))).toContain(secret);

    const logged = JSON.stringify(loggableError(error));
    expect(logged).not.toContain(secret);
    expect(logged).toContain("Failed query: select $1::text");
    expect(logged).toContain("division by zero");
  });

  it("leaves other errors and text as they are", () => {
    const logged = loggableError(new TypeError("x is not a function")) as Record<string, unknown>;
    expect(logged).toMatchObject({ type: "TypeError", message: "x is not a function" });
    expect(withoutQueryParameters("Failed query: select 1\nparams: a,b\nmore")).toBe(
      "Failed query: select 1\nparams: [not logged]\nmore",
    );
  });
});
