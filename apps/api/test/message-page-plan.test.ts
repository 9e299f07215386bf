import { createDatabaseClient, type DatabaseClient } from "@parley/db";
import { describe, expect, it } from "vitest";
import { listConversationMessages, listConversationMessageVersions } from "../src/messages/queries.js";
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
      const statements = await pageStatementPlans(single);
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

  // Beside one conversation that holds most of the table, many small ones: a connection
  // whose first pages were of small conversations costed their plans (made for one
  // conversation the statistics know as rare) below the generic plan (made for an average
  // conversation, the big one counted), and planned every later page again: 10 % of the
  // pages of traffic spread over 2,000 conversations (bench/notebook.md, 2026-11-29, night).
  it("keeps the generic plan when the first pages are of small conversations beside a big one", async () => {
    // The first test's messages are in the table already: this one's have ids of their own.
    const { org, conversationId } = await conversationWithMessages(api, 20_000, undefined, "msg_big_");
    await api.client.sql`
      insert into conversations (id, organization_id, environment, contact_id)
      select 'conv_small_' || lpad(n::text, 5, '0'), ${org.id}, 'test', big.contact_id
      from conversations big cross join generate_series(1, 400) as n where big.id = ${conversationId}`;
    await api.client.sql`
      insert into messages (id, organization_id, environment, conversation_id, direction, type, text, status, created_at, updated_at)
      select 'msg_small_' || lpad(n::text, 5, '0') || '_' || lpad(k::text, 2, '0'), ${org.id}, 'test',
             'conv_small_' || lpad(n::text, 5, '0'), 'outbound', 'text', 'x', 'sent', now() - make_interval(secs => k), now()
      from generate_series(1, 400) as n cross join generate_series(1, 25) as k`;
    await api.client.sql`analyze messages`;
    const tenant = { organizationId: org.id, environment: "test" as const };
    const single = createDatabaseClient(api.databaseUrl, { max: 1 });
    try {
      for (let call = 1; call <= 20; call++) {
        const small = `conv_small_${String(call).padStart(5, "0")}`;
        expect(await listConversationMessages(single.db, tenant, small, {}, 25)).toHaveLength(25);
      }
      const [statement] = await pageStatementPlans(single);
      expect(statement?.custom_plans).toBeLessThanOrEqual(6);
      expect(statement?.generic_plans).toBeGreaterThanOrEqual(14);
    } finally {
      await single.close();
    }
  });

  // A cursor near the conversation's oldest end: a plan made for its values expects a few
  // rows before it and was costed below the generic plan (a third of the conversation), so
  // every deep page was planned again (the bench's deep page: 210 plans for 200 calls).
  it("keeps the generic plan for the pages deep in a conversation", async () => {
    const { org, conversationId } = await conversationWithMessages(api, 200_000, undefined, "msg_deep_");
    await api.client.sql`analyze messages`;
    const [deep] = await api.client.sql<{ id: string; created_at: string }[]>`
      select id, created_at from messages where conversation_id = ${conversationId}
      order by created_at, id offset 100 limit 1`;
    if (!deep) throw new Error("the conversation has no messages");
    const after = { id: deep.id, createdAt: new Date(deep.created_at) };
    const tenant = { organizationId: org.id, environment: "test" as const };
    const single = createDatabaseClient(api.databaseUrl, { max: 1 });
    try {
      for (let call = 0; call < 20; call++) {
        expect(await listConversationMessages(single.db, tenant, conversationId, {}, 25, after)).toHaveLength(26);
        expect(await listConversationMessageVersions(single.db, tenant, conversationId, 25, after)).toHaveLength(26);
      }
      const statements = await pageStatementPlans(single);
      expect(statements).toHaveLength(2);
      for (const statement of statements) {
        expect(statement.custom_plans).toBeLessThanOrEqual(6);
        expect(statement.generic_plans).toBeGreaterThanOrEqual(14);
      }
    } finally {
      await single.close();
    }
  });
});

/** How often PostgreSQL planned each page statement that `client`'s one connection prepared, for its values or generically. */
function pageStatementPlans(client: DatabaseClient) {
  return client.sql<{ generic_plans: number; custom_plans: number }[]>`
    select generic_plans::int, custom_plans::int from pg_prepared_statements
    where statement like 'select "id", %' and statement like '%from "messages"%'`;
}
