import { createDatabaseClient } from "@parley/db";
import { describe, expect, it } from "vitest";
import { listConversationMessages } from "../src/messages/queries.js";
import { conversationWithMessages, useTestApi } from "./harness.js";

// A database of its own: what PostgreSQL decides depends on the statistics of every
// conversation in the table, and here one conversation holds nearly all the messages.
const api = useTestApi({}, { ownDatabase: true });

describe("a conversation's page, prepared", () => {
  // With the page size a plain parameter, the generic plan took the limit for a tenth of an
  // average conversation's messages (here: of nearly the whole table), was costed far above
  // each call's own plan, and PostgreSQL planned the page again on every call: more of its
  // CPU than running it (bench/notebook.md, "2026-11-26, night: the page's plan").
  it("keeps PostgreSQL's generic plan after the first calls, first page and next", async () => {
    const { org, conversationId } = await conversationWithMessages(api, 5000);
    await api.client.sql`analyze messages`;
    const tenant = { organizationId: org.id, environment: "test" as const };
    // One connection: a connection's prepared statements are its own.
    const single = createDatabaseClient(api.databaseUrl, { max: 1 });
    try {
      const [, last] = await listConversationMessages(single.db, tenant, conversationId, {}, 1);
      if (!last) throw new Error("the conversation has no second message");
      for (let call = 0; call < 10; call++) {
        expect(await listConversationMessages(single.db, tenant, conversationId, {}, 25)).toHaveLength(26);
        expect(await listConversationMessages(single.db, tenant, conversationId, {}, 25, last)).toHaveLength(26);
      }
      const statements = await single.sql<{ generic_plans: number; custom_plans: number }[]>`
        select generic_plans::int, custom_plans::int from pg_prepared_statements
        where statement like 'select "id", %' and statement like '%from "messages"%'`;
      expect(statements).toHaveLength(2);
      for (const statement of statements) {
        // PostgreSQL plans the first five calls for their values, then weighs its generic plan.
        expect(statement.custom_plans).toBeLessThanOrEqual(6);
        expect(statement.generic_plans).toBeGreaterThanOrEqual(5);
      }
    } finally {
      await single.close();
    }
  });
});
