import { randomBytes } from "node:crypto";
import { startTestDatabase } from "@parley/db";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type AccountInputs, takeAccount } from "../src/account.js";
import type { InboundRecord, SendRecord } from "../src/traffic.js";

/**
 * The account's verdict on a world planted in a real PostgreSQL: the soak says "nothing
 * lost" only when that is so, and otherwise names each loss by its id (issue 41, item 4).
 */
let database: { url: string; stop(): Promise<void> };
let sql: postgres.Sql;

beforeAll(async () => {
  database = await startTestDatabase();
  sql = postgres(database.url, { max: 2, onnotice: () => {} });
});

afterAll(async () => {
  await sql?.end();
  await database?.stop();
});

const unique = () => randomBytes(6).toString("hex");

/** A soak send's key, as the traffic writes it into the message's text. */
const sendKey = () => `soak-${Math.floor(Math.random() * 1e6)}-${unique()}`;

interface World {
  organizationId: string;
  conversationId: string;
  inputs: AccountInputs;
}

/** An organization with one conversation, and the soak's inputs as after a clean run with nothing in it. */
async function world(): Promise<World> {
  const organizationId = `org_${unique()}`;
  const contactId = `ct_${unique()}`;
  const conversationId = `cv_${unique()}`;
  await sql`insert into organizations (id, name) values (${organizationId}, 'Account test')`;
  await sql`insert into contacts (id, organization_id, environment) values (${contactId}, ${organizationId}, 'live')`;
  await sql`
    insert into conversations (id, organization_id, environment, contact_id)
    values (${conversationId}, ${organizationId}, 'live', ${contactId})`;
  return {
    organizationId,
    conversationId,
    inputs: {
      sql,
      organizationId,
      endpointsCreatedAt: new Date(Date.now() - 60_000),
      sends: new Map(),
      inbound: [],
      meta: { requests: [] },
      sink: { messages: [] },
      receiver: { arrivals: new Map(), badSignatures: [] },
      crashes: [],
    },
  };
}

/** A send the client was answered 201 for, stored as the API stores it, `status` reached. */
async function answeredSend(
  w: World,
  route: SendRecord["route"],
  status: string,
  options: { stored?: boolean; storedTwice?: boolean } = {},
): Promise<{ id: string; key: string }> {
  const key = sendKey();
  const id = `msg_${unique()}`;
  w.inputs.sends.set(key, { key, route, image: false, at: 0, answeredIds: new Set([id]) });
  if (options.stored === false) return { id, key };
  await storeOutbound(w, id, key, status);
  if (options.storedTwice) await storeOutbound(w, `msg_${unique()}`, key, status);
  return { id, key };
}

async function storeOutbound(w: World, id: string, key: string, status: string): Promise<void> {
  await sql`
    insert into messages (id, organization_id, environment, conversation_id, direction, type, text, status)
    values (${id}, ${w.organizationId}, 'live', ${w.conversationId}, 'outbound', 'text', ${`Soak ${key}`}, ${status})`;
}

async function recordEvent(w: World, delivered: boolean): Promise<string> {
  const id = `evt_${unique()}`;
  await sql`
    insert into events (id, organization_id, environment, type, data)
    values (${id}, ${w.organizationId}, 'live', 'message.created', '{}'::jsonb)`;
  if (delivered) w.inputs.receiver.arrivals.set(id, 1);
  return id;
}

async function inbound(w: World, via: InboundRecord["via"], stored: number): Promise<string> {
  const id = `wamid.${unique()}`;
  w.inputs.inbound.push({ id, via, at: 0, acknowledged: true });
  for (let copy = 0; copy < stored; copy++) {
    // Two copies of one provider id cannot share the unique index's environment: the second
    // goes to the test environment, as a planted double would have to.
    await sql`
      insert into messages (id, organization_id, environment, conversation_id, direction, type, text, provider_message_id)
      values (${`msg_${unique()}`}, ${w.organizationId}, ${copy === 0 ? "live" : "test"}, ${w.conversationId},
              'inbound', 'text', 'Hello', ${via === "smtp" ? `<${id}>` : id})`;
  }
  return id;
}

function graphSend(w: World, key: string): void {
  w.inputs.meta.requests.push({
    method: "POST",
    path: "/v21.0/1234/messages",
    headers: {},
    body: { messaging_product: "whatsapp", text: { body: `Soak ${key}` } },
  } as unknown as AccountInputs["meta"]["requests"][number]);
}

describe("the soak's account", () => {
  test("says nothing was lost when every send, provider send, event and inbound message is where it should be", async () => {
    const w = await world();
    await answeredSend(w, "sandbox", "delivered");
    const whatsapp = await answeredSend(w, "whatsapp", "sent");
    graphSend(w, whatsapp.key);
    await recordEvent(w, true);
    await inbound(w, "meta", 1);
    await inbound(w, "smtp", 1);

    const account = await takeAccount(w.inputs);

    expect(account.failures).toEqual([]);
    expect(account.ok).toBe(true);
    expect(account.sends.answered).toBe(2);
    expect(account.providers.meta).toMatchObject({ expected: 1, received_once: 1, missing: [] });
    expect(account.events).toMatchObject({ recorded: 1, received: 1, missing: [] });
    expect(account.inbound.meta).toMatchObject({ acknowledged: 1, stored_once: 1 });
    expect(account.inbound.smtp).toMatchObject({ acknowledged: 1, stored_once: 1 });
  });

  test("names a send answered 201 whose message is not stored", async () => {
    const w = await world();
    await answeredSend(w, "sandbox", "delivered");
    const lost = await answeredSend(w, "sandbox", "delivered", { stored: false });

    const account = await takeAccount(w.inputs);

    expect(account.ok).toBe(false);
    expect(account.sends.lost).toEqual([`${lost.id} (${lost.key})`]);
    expect(account.failures).toEqual([`1 sends answered 201 but not stored: ${lost.id} (${lost.key})`]);
  });

  test("names an event recorded but never delivered to the receiver", async () => {
    const w = await world();
    await recordEvent(w, true);
    const missing = await recordEvent(w, false);

    const account = await takeAccount(w.inputs);

    expect(account.ok).toBe(false);
    expect(account.events.missing).toEqual([missing]);
    expect(account.failures).toEqual([`1 events recorded but never delivered to the receiver: ${missing}`]);
  });

  test("names a WhatsApp send Meta never received, and one stuck short of its final state", async () => {
    const w = await world();
    const unsent = await answeredSend(w, "whatsapp", "sent");
    const stuck = await answeredSend(w, "sandbox", "queued");

    const account = await takeAccount(w.inputs);

    expect(account.ok).toBe(false);
    expect(account.failures).toEqual(
      expect.arrayContaining([
        `1 sends that never reached their final state: ${stuck.id} (queued)`,
        `1 WhatsApp sends Meta never received: ${unsent.id} (${unsent.key})`,
      ]),
    );
  });

  test("names a send stored twice and a key answered with two different messages", async () => {
    const w = await world();
    const twice = await answeredSend(w, "sandbox", "delivered", { storedTwice: true });
    const conflicting = await answeredSend(w, "sandbox", "delivered");
    const other = `msg_${unique()}`;
    w.inputs.sends.get(conflicting.key)?.answeredIds.add(other);

    const account = await takeAccount(w.inputs);

    expect(account.ok).toBe(false);
    expect(account.sends.stored_twice).toEqual([expect.stringMatching(new RegExp(`^${twice.key} \\(`))]);
    expect(account.sends.idempotency_conflicts).toEqual([`${conflicting.key} (${conflicting.id}, ${other})`]);
  });

  test("names inbound messages accepted but not stored, and one stored twice", async () => {
    const w = await world();
    const missingWhatsApp = await inbound(w, "meta", 0);
    const missingEmail = await inbound(w, "smtp", 0);
    const doubled = await inbound(w, "meta", 2);

    const account = await takeAccount(w.inputs);

    expect(account.ok).toBe(false);
    expect(account.failures).toEqual([
      `1 inbound WhatsApp messages accepted but not stored: ${missingWhatsApp}`,
      `1 inbound WhatsApp messages stored twice: ${doubled}`,
      `1 inbound emails accepted but not stored: ${missingEmail}`,
    ]);
  });
});
