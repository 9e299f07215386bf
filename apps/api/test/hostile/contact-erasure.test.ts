import { randomInt, randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { receiveText, sandboxChannel, sendText, waitForStatus } from "../delivery-helpers.js";
import { as, createTestOrganization, eventually, useTestApi, useTestWorker, walkList } from "../harness.js";
import { useWebhookReceiver } from "../webhook-receiver.js";

/**
 * Issue 21, item 17: `DELETE /contacts/{id}` "irreversibly cascades", and erasure reaches
 * every copy: no route and no table (of Parley's or of the job queue's) holds the contact's
 * name, email, phone or message texts afterwards, webhook delivery records and stored
 * idempotent responses included. Issue 40: nor its SMS opt-outs (no table holds its id).
 */
const api = useTestApi({ RATE_LIMIT_PER_MINUTE: "100000" }, { ownDatabase: true });
useTestWorker(api, { webhookFastRetry: true });
const receiver = useWebhookReceiver();

/** Every table of every schema but PostgreSQL's own, searched for `needle` in any column. */
async function tablesHolding(needle: string): Promise<string[]> {
  const tables = await api.client.sql<{ schema: string; name: string }[]>`
    select table_schema as schema, table_name as name from information_schema.tables
    where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`;
  const found: string[] = [];
  for (const { schema, name } of tables) {
    const qualified = `"${schema}"."${name}"`;
    const [row] = await api.client.sql.unsafe<{ count: number }[]>(
      `select count(*)::int as count from ${qualified} as t where t::text ilike $1`,
      [`%${needle}%`],
    );
    if ((row?.count ?? 0) > 0) found.push(qualified);
  }
  return found;
}

describe("deleting a contact erases every copy of its data", () => {
  it("leaves no name, email, phone or message text in any route or table", async () => {
    const organization = await createTestOrganization(api);
    const client = as(api, organization.test);
    const unique = randomInt(1_000_000, 9_999_999);
    const needles = {
      name: `Zelda Erasure${unique}`,
      email: `zelda.${unique}@example.com`,
      phone: `+1555${unique}`,
      sent: `private words sent ${unique}`,
      received: `private words received ${unique}`,
      texted: `private words texted ${unique}`,
    };
    // Receivers that echo what they get: the delivery records' response excerpts hold it too.
    const echo = receiver.endpoint((request) => ({ status: 200, body: request.body }));
    const webhook = await client.post("/webhooks", { body: { url: echo.url, events: ["*"] } });
    expect(webhook.status, JSON.stringify(webhook.body)).toBe(201);

    const contact = await client.post("/contacts", {
      body: { name: needles.name, email: needles.email, phone: needles.phone },
      headers: { "Idempotency-Key": randomUUID() },
    });
    expect(contact.status, JSON.stringify(contact.body)).toBe(201);
    const channel = await sandboxChannel(client, "whatsapp");
    const conversation = await client.post("/conversations", {
      body: { contact_id: contact.body.id, channel_id: channel.id },
      headers: { "Idempotency-Key": randomUUID() },
    });
    expect(conversation.status, JSON.stringify(conversation.body)).toBe(201);
    // The customer writes first: WhatsApp's 24-hour window opens.
    await receiveText(client, conversation.body.id, needles.received);
    const sent = await client.post("/messages", {
      body: { conversation_id: conversation.body.id, type: "text", text: needles.sent },
      headers: { "Idempotency-Key": randomUUID() },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    await sendText(client, conversation.body.id, `${needles.sent} again`);
    await waitForStatus(api, client, sent.body.id, "delivered");
    // The same person texts the sandbox SMS channel, then opts out of it: an opt-out to erase.
    const sms = await sandboxChannel(client, "sms");
    for (const text of [needles.texted, "STOP"]) {
      const texted = await client.post("/test-helpers/inbound-messages", {
        body: { channel_id: sms.id, from: needles.phone, type: "text", text },
      });
      expect(texted.status, JSON.stringify(texted.body)).toBe(201);
    }
    const optOuts = await client.get(`/contacts/${contact.body.id}/opt-outs`);
    expect(optOuts.body.data).toMatchObject([{ contact_id: contact.body.id, channel_id: sms.id, keyword: "STOP" }]);

    // Everything recorded has been delivered (so no attempt is in flight at the deletion).
    await eventually(
      async () => {
        const [pending] = await api.client.sql<{ count: number }[]>`
          select (select count(*) from event_outbox)::int + (select count(*) from graphile_worker.jobs
            where task_identifier = 'deliver_webhook')::int as count`;
        return { pending: pending?.count ?? 0, received: echo.received.map((request) => request.body).join("\n") };
      },
      ({ pending, received }) =>
        pending === 0 && received.includes(needles.received) && received.includes(needles.name),
      20_000,
    );
    for (const needle of Object.values(needles)) expect(await tablesHolding(needle), needle).not.toEqual([]);
    expect(await tablesHolding(contact.body.id)).toContain('"public"."sms_opt_outs"');

    const deleted = await client.delete(`/contacts/${contact.body.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ object: "contact", id: contact.body.id, deleted: true });

    const everything = JSON.stringify([
      await walkList(client, "/events", { limit: 100 }),
      await walkList(client, `/webhooks/${webhook.body.id}/deliveries`, { limit: 100 }),
      await walkList(client, "/contacts", { limit: 100 }),
      await walkList(client, "/conversations", { limit: 100 }),
    ]);
    for (const needle of Object.values(needles)) {
      expect(everything, needle).not.toContain(needle);
      expect(await tablesHolding(needle), needle).toEqual([]);
    }
    expect(await tablesHolding(contact.body.id), "the contact's id").toEqual([]);
    expect((await client.get(`/contacts/${contact.body.id}/opt-outs`)).status).toBe(404);
    // What the worker still had to do about the contact (receipts) finds nothing to restore.
    await eventually(
      async () =>
        (
          await api.client.sql<{ count: number }[]>`
            select count(*)::int as count from graphile_worker.jobs where task_identifier <> 'cleanup_expired'`
        )[0]?.count,
      (count) => count === 0,
      20_000,
    );
    for (const needle of Object.values(needles)) expect(await tablesHolding(needle), needle).toEqual([]);
  });
});
