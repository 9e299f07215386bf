import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  type ApiResponse,
  as,
  type Client,
  createTestOrganization,
  expectError,
  useTestApi,
  walkList,
} from "../../test/harness.js";

const api = useTestApi();

function withKey(key: string) {
  return { "Idempotency-Key": key };
}

function replayed(response: ApiResponse): string | null {
  return response.headers.get("idempotent-replayed");
}

async function newClient(): Promise<Client> {
  return as(api, (await createTestOrganization(api)).test);
}

async function contactIds(client: Client): Promise<string[]> {
  return (await walkList<{ id: string }>(client, "/contacts", { limit: 100 })).map((contact) => contact.id);
}

describe("POST /contacts with Idempotency-Key", () => {
  it("replays the stored response, marked Idempotent-Replayed, without creating again", async () => {
    const client = await newClient();
    const key = randomUUID();
    const body = { name: "Ada", email: "ada@example.com", metadata: { source: "import", rank: 2 } };

    const first = await client.post("/contacts", { body, headers: withKey(key) });
    expect(first.status).toBe(201);
    expect(replayed(first)).toBeNull();

    const second = await client.post("/contacts", { body, headers: withKey(key) });
    expect(second.status).toBe(201);
    expect(replayed(second)).toBe("true");
    expect(second.body).toEqual(first.body);
    // The very same JSON, field order included.
    expect(JSON.stringify(second.body)).toBe(JSON.stringify(first.body));
    expect(second.headers.get("x-parley-request-id")).not.toBe(first.headers.get("x-parley-request-id"));
    expect(await contactIds(client)).toEqual([first.body.id]);
  });

  it("answers a replay with the first answer's very bytes, and a message send too", async () => {
    const organization = await createTestOrganization(api);
    const post = async (path: string, body: unknown, key: string) => {
      const response = await fetch(`${api.baseUrl}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${organization.test}`, "content-type": "application/json", ...withKey(key) },
        body: JSON.stringify(body),
      });
      return {
        status: response.status,
        replayed: response.headers.get("idempotent-replayed"),
        text: await response.text(),
      };
    };
    const contactKey = randomUUID();
    const contact = { name: "Zoë ✓", metadata: { nested: { b: 1, a: [true, null, "é"] } } };
    const first = await post("/contacts", contact, contactKey);
    const again = await post("/contacts", contact, contactKey);
    expect([first.status, first.replayed, again.status, again.replayed]).toEqual([201, null, 201, "true"]);
    expect(again.text).toBe(first.text);

    const client = as(api, organization.test);
    const { id: contactId } = JSON.parse(first.text);
    const conversation = await client.post("/conversations", { body: { contact_id: contactId } });
    const send = { conversation_id: conversation.body.id, type: "text", text: "Hello ✓", metadata: { order: 7 } };
    const sendKey = randomUUID();
    const sent = await post("/messages", send, sendKey);
    const resent = await post("/messages", send, sendKey);
    expect([sent.status, resent.status, resent.replayed]).toEqual([201, 201, "true"]);
    expect(resent.text).toBe(sent.text);
  });

  it("stores each of many concurrent sends once, with its key, and a refusal among them changes nothing for the others", async () => {
    // Sends that arrive together share a transaction (group-commit.ts).
    const client = await newClient();
    const contact = await client.post("/contacts", { body: { name: "Grace" } });
    const conversation = await client.post("/conversations", { body: { contact_id: contact.body.id } });
    const send = (text: string, key: string, conversationId = conversation.body.id) =>
      client.post("/messages", {
        body: { conversation_id: conversationId, type: "text", text },
        headers: withKey(key),
      });
    const keys = Array.from({ length: 24 }, () => randomUUID());
    const refusedKey = randomUUID();
    const [refused, ...sent] = await Promise.all([
      send("nowhere", refusedKey, "conv_00000000000000000000000000"),
      ...keys.map((key, i) => send(`message ${i}`, key)),
    ]);
    expectError(refused as ApiResponse, 404, "resource_not_found");
    expect(sent.map((response) => response.status)).toEqual(keys.map(() => 201));
    const stored = await walkList<{ id: string; text: string }>(
      client,
      `/conversations/${conversation.body.id}/messages`,
      { limit: 100 },
    );
    expect(stored.map((message) => message.id).sort()).toEqual(sent.map((response) => response.body.id).sort());

    // Every key answers its own message again; the refused key is free.
    const again = await Promise.all(keys.map((key, i) => send(`message ${i}`, key)));
    expect(again.map((response) => [replayed(response), response.body.id])).toEqual(
      sent.map((response) => ["true", response.body.id]),
    );
    const retried = await send("now somewhere", refusedKey);
    expect([retried.status, replayed(retried)]).toEqual([201, null]);
  });

  it("replays the response of the first request, not the resource as it is now", async () => {
    const client = await newClient();
    const key = randomUUID();
    const first = await client.post("/contacts", { body: { name: "Ada" }, headers: withKey(key) });
    await client.patch(`/contacts/${first.body.id}`, { body: { name: "Ada Lovelace" } });

    const second = await client.post("/contacts", { body: { name: "Ada" }, headers: withKey(key) });

    expect(replayed(second)).toBe("true");
    expect(second.body.name).toBe("Ada");
    expect(second.body.updated_at).toBe(first.body.updated_at);
  });

  it("treats a body with the same fields in another order as the same request", async () => {
    const client = await newClient();
    const key = randomUUID();
    const first = await client.post("/contacts", {
      rawBody: '{"name":"Ada","email":"ada@example.com","metadata":{"a":1,"b":2}}',
      headers: { ...withKey(key), "content-type": "application/json" },
    });
    const second = await client.post("/contacts", {
      rawBody: '{"metadata":{"b":2,"a":1},"email":"ada@example.com","name":"Ada"}',
      headers: { ...withKey(key), "content-type": "application/json" },
    });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(replayed(second)).toBe("true");
    expect(second.body.id).toBe(first.body.id);
  });

  it("refuses the same key with a different body: 409 idempotency_key_reuse", async () => {
    const client = await newClient();
    const key = randomUUID();
    const first = await client.post("/contacts", { body: { name: "Ada" }, headers: withKey(key) });
    expect(first.status).toBe(201);

    for (const body of [{ name: "Grace" }, { name: "Ada", email: "ada@example.com" }, {}]) {
      const reused = await client.post("/contacts", { body, headers: withKey(key) });
      expectError(reused, 409, "idempotency_key_reuse");
      expect(replayed(reused)).toBeNull();
    }
    expect(await contactIds(client)).toEqual([first.body.id]);
  });

  it("runs concurrent duplicates once: the others are in progress or replays", async () => {
    const client = await newClient();
    const key = randomUUID();
    const body = { name: "Concurrent Carl" };

    const responses = await Promise.all(
      Array.from({ length: 5 }, () => client.post("/contacts", { body, headers: withKey(key) })),
    );

    const executed = responses.filter((response) => response.status === 201 && replayed(response) === null);
    expect(executed).toHaveLength(1);
    const id = executed[0]?.body.id;
    for (const response of responses) {
      if (response === executed[0]) continue;
      if (response.status === 409) {
        expectError(response, 409, "idempotency_in_progress");
      } else {
        expect({ status: response.status, replayed: replayed(response), id: response.body.id }).toEqual({
          status: 201,
          replayed: "true",
          id,
        });
      }
    }
    expect(await contactIds(client)).toEqual([id]);
    const retry = await client.post("/contacts", { body, headers: withKey(key) });
    expect({ status: retry.status, replayed: replayed(retry), id: retry.body.id }).toEqual({
      status: 201,
      replayed: "true",
      id,
    });
  });

  it("does not store the key of a request that failed validation", async () => {
    const client = await newClient();
    const key = randomUUID();
    expectError(await client.post("/contacts", { body: { name: 42 }, headers: withKey(key) }), 422, "validation_error");
    expectError(await client.post("/contacts", { body: { name: 42 }, headers: withKey(key) }), 422, "validation_error");

    const retry = await client.post("/contacts", { body: { name: "Ada" }, headers: withKey(key) });

    expect(retry.status).toBe(201);
    expect(replayed(retry)).toBeNull();
    expect(await contactIds(client)).toEqual([retry.body.id]);
  });

  it("does not store the key of a request the handler refused", async () => {
    const client = await newClient();
    const key = randomUUID();
    const unknownField = await client.post("/contacts", {
      body: { name: "Ada", custom_fields: { plan: "pro" } },
      headers: withKey(key),
    });
    expectError(unknownField, 422, "validation_error");
    const unknownTag = await client.post("/contacts", {
      body: { name: "Ada", tags: ["tag_00000000000000000000000000"] },
      headers: withKey(key),
    });
    expectError(unknownTag, 404, "resource_not_found");

    // The same body now succeeds: the field exists.
    expect((await client.post("/custom-fields", { body: { name: "Plan", key: "plan" } })).status).toBe(201);
    const retry = await client.post("/contacts", {
      body: { name: "Ada", custom_fields: { plan: "pro" } },
      headers: withKey(key),
    });
    expect(retry.status).toBe(201);
    expect(replayed(retry)).toBeNull();
    expect(retry.body.custom_fields).toEqual({ plan: "pro" });
  });

  it("keeps keys of different organizations apart", async () => {
    const mine = await newClient();
    const theirs = await newClient();
    const key = randomUUID();

    const a = await mine.post("/contacts", { body: { name: "Mine" }, headers: withKey(key) });
    const b = await theirs.post("/contacts", { body: { name: "Theirs" }, headers: withKey(key) });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(replayed(b)).toBeNull();
    expect(b.body.id).not.toBe(a.body.id);

    const sameBodyElsewhere = await as(api, (await createTestOrganization(api)).test).post("/contacts", {
      body: { name: "Mine" },
      headers: withKey(key),
    });
    expect(sameBodyElsewhere.status).toBe(201);
    expect(replayed(sameBodyElsewhere)).toBeNull();
    expect(sameBodyElsewhere.body.id).not.toBe(a.body.id);

    const replay = await theirs.post("/contacts", { body: { name: "Theirs" }, headers: withKey(key) });
    expect(replayed(replay)).toBe("true");
    expect(replay.body.id).toBe(b.body.id);
    expect(await contactIds(mine)).toEqual([a.body.id]);
  });

  it("keeps the test and live environments of one organization apart (issue 21, item 13)", async () => {
    const organization = await createTestOrganization(api);
    const test = as(api, organization.test);
    const live = as(api, organization.live);
    const key = randomUUID();

    const inTest = await test.post("/contacts", { body: { name: "Ada" }, headers: withKey(key) });
    const inLive = await live.post("/contacts", { body: { name: "Ada" }, headers: withKey(key) });
    expect(inTest.status).toBe(201);
    expect(inLive.status).toBe(201);
    expect(replayed(inLive)).toBeNull();
    expect(inLive.body.id).not.toBe(inTest.body.id);

    const replayInLive = await live.post("/contacts", { body: { name: "Ada" }, headers: withKey(key) });
    expect(replayed(replayInLive)).toBe("true");
    expect(replayInLive.body.id).toBe(inLive.body.id);
    const otherBodyInTest = await test.post("/contacts", { body: { name: "Grace" }, headers: withKey(key) });
    expectError(otherBodyInTest, 409, "idempotency_key_reuse");
  });

  it("forgets a key after 24 hours: the same key then creates anew (issue 23, item 6)", async () => {
    const client = await newClient();
    const key = randomUUID();
    const first = await client.post("/contacts", { body: { name: "Ada" }, headers: withKey(key) });
    expect(first.status).toBe(201);
    const young = await client.post("/contacts", { body: { name: "Ada" }, headers: withKey(key) });
    expect(replayed(young)).toBe("true");

    // A day and a minute later (the sweep job has not run: the API itself must forget it).
    await api.client.sql`
      update idempotency_keys set created_at = now() - interval '24 hours 1 minute' where key = ${key}`;
    const later = await client.post("/contacts", { body: { name: "Ada" }, headers: withKey(key) });
    expect(later.status).toBe(201);
    expect(replayed(later)).toBeNull();
    expect(later.body.id).not.toBe(first.body.id);
    // And remembered again from now on, even for another body than the forgotten one's.
    const otherBody = await client.post("/contacts", { body: { name: "Grace" }, headers: withKey(key) });
    expectError(otherBody, 409, "idempotency_key_reuse");
  });

  it("accepts keys up to 255 characters and refuses longer ones with 422", async () => {
    const client = await newClient();
    const longest = "k".repeat(255);
    const accepted = await client.post("/contacts", { body: { name: "Ada" }, headers: withKey(longest) });
    expect(accepted.status).toBe(201);
    expect(replayed(await client.post("/contacts", { body: { name: "Ada" }, headers: withKey(longest) }))).toBe("true");

    const refused = await client.post("/contacts", { body: { name: "Grace" }, headers: withKey("k".repeat(256)) });
    expectError(refused, 422, "validation_error");
    expect(await contactIds(client)).toEqual([accepted.body.id]);
  });

  it("replays a find-or-create answer with its own status", async () => {
    const client = await newClient();
    const existing = await client.post("/contacts", { body: { name: "Ada", external_id: "crm-1" } });
    expect(existing.status).toBe(201);
    const key = randomUUID();

    const found = await client.post("/contacts", { body: { external_id: "crm-1" }, headers: withKey(key) });
    const replay = await client.post("/contacts", { body: { external_id: "crm-1" }, headers: withKey(key) });

    expect({ status: found.status, replayed: replayed(found), id: found.body.id }).toEqual({
      status: 200,
      replayed: null,
      id: existing.body.id,
    });
    expect({ status: replay.status, replayed: replayed(replay), id: replay.body.id }).toEqual({
      status: 200,
      replayed: "true",
      id: existing.body.id,
    });
  });

  it("replays a creation as 201 even though the external_id now exists", async () => {
    const client = await newClient();
    const key = randomUUID();
    const body = { name: "Ada", external_id: "crm-2" };

    const created = await client.post("/contacts", { body, headers: withKey(key) });
    const replay = await client.post("/contacts", { body, headers: withKey(key) });
    const withoutKey = await client.post("/contacts", { body });

    expect(created.status).toBe(201);
    expect({ status: replay.status, replayed: replayed(replay), id: replay.body.id }).toEqual({
      status: 201,
      replayed: "true",
      id: created.body.id,
    });
    expect({ status: withoutKey.status, id: withoutKey.body.id }).toEqual({ status: 200, id: created.body.id });
  });
});

describe("routes that ignore Idempotency-Key", () => {
  it("POST /tags runs every request", async () => {
    const client = await newClient();
    const key = randomUUID();

    const vip = await client.post("/tags", { body: { name: "vip" }, headers: withKey(key) });
    const lead = await client.post("/tags", { body: { name: "lead" }, headers: withKey(key) });
    const again = await client.post("/tags", { body: { name: "vip" }, headers: withKey(key) });

    expect([vip.status, lead.status]).toEqual([201, 201]);
    expect(lead.body.id).not.toBe(vip.body.id);
    expectError(again, 409, "resource_already_exists");
    for (const response of [vip, lead, again]) expect(replayed(response)).toBeNull();
    const names = (await walkList<{ name: string }>(client, "/tags")).map((tag) => tag.name);
    expect(names.sort()).toEqual(["lead", "vip"]);
  });

  it("POST /custom-fields runs every request", async () => {
    const client = await newClient();
    const key = randomUUID();
    const plan = await client.post("/custom-fields", { body: { name: "Plan" }, headers: withKey(key) });
    const region = await client.post("/custom-fields", { body: { name: "Region" }, headers: withKey(key) });
    expect([plan.status, region.status]).toEqual([201, 201]);
    expect(region.body.id).not.toBe(plan.body.id);
    expect(replayed(region)).toBeNull();
  });

  it("a key used on an ignoring route stays free for POST /contacts", async () => {
    const client = await newClient();
    const key = randomUUID();
    expect((await client.post("/tags", { body: { name: "vip" }, headers: withKey(key) })).status).toBe(201);
    const contact = await client.post("/contacts", { body: { name: "Ada" }, headers: withKey(key) });
    expect(contact.status).toBe(201);
    expect(replayed(contact)).toBeNull();
  });
});
