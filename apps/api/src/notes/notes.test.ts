import type { Scope } from "@parley/schema";
import { describe, expect, it } from "vitest";
import {
  as,
  type Client,
  expectError,
  expectValidationError,
  setupOrganization,
  TIMESTAMP,
  useTestApi,
  walkList,
} from "../../test/harness.js";
import { createApiKey } from "../organizations/api-keys.js";

const api = useTestApi();

const NOTE_ID = /^note_[0-9A-HJKMNP-TV-Z]{26}$/;
const UNKNOWN_CONVERSATION = "conv_01ARZ3NDEKTSV4RRFFQ69G5FAV";

const setup = () => setupOrganization(api);

async function createConversation(client: Client) {
  const contact = await client.post("/contacts", { body: {} });
  expect(contact.status).toBe(201);
  const channels = await client.get("/channels", { query: { type: "whatsapp" } });
  const channelId = channels.body.data[0]?.id;
  const body = channelId ? { contact_id: contact.body.id, channel_id: channelId } : { contact_id: contact.body.id };
  const response = await client.post("/conversations", { body });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

/** Setup plus one conversation of the test environment. */
async function setupConversation() {
  const context = await setup();
  return { ...context, conversation: await createConversation(context.client) };
}

async function createNote(client: Client, conversationId: string, body: string) {
  const response = await client.post(`/conversations/${conversationId}/notes`, { body: { body } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

async function listNotes(client: Client, conversationId: string) {
  return walkList(client, `/conversations/${conversationId}/notes`, { limit: 100 });
}

async function eventTypes(organizationId: string) {
  const rows = await api.client.sql<{ type: string }[]>`
    select type from events where organization_id = ${organizationId} order by created_at, id`;
  return rows.map((row) => row.type);
}

describe("POST /conversations/{conversation_id}/notes", () => {
  it("creates a note with 201 and lists it", async () => {
    const { client, conversation } = await setupConversation();

    const response = await client.post(`/conversations/${conversation.id}/notes`, {
      body: { body: "Customer prefers email." },
    });

    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      object: "note",
      id: expect.stringMatching(NOTE_ID),
      conversation_id: conversation.id,
      body: "Customer prefers email.",
      author_key_id: (await client.get("/api-keys/current")).body.id,
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect(await listNotes(client, conversation.id)).toEqual([response.body]);
  });

  it("keeps the body exactly as written, line breaks and indentation included", async () => {
    const { client, conversation } = await setupConversation();
    const text = "  Steps:\n    1. restart\n    2. retry\n";

    const note = await createNote(client, conversation.id, text);

    expect(note.body).toBe(text);
    expect((await listNotes(client, conversation.id))[0]?.body).toBe(text);
  });

  it("accepts a body of 10,000 characters and refuses 10,001", async () => {
    const { client, conversation } = await setupConversation();

    expect((await createNote(client, conversation.id, "n".repeat(10_000))).body).toHaveLength(10_000);
    expectValidationError(
      await client.post(`/conversations/${conversation.id}/notes`, { body: { body: "n".repeat(10_001) } }),
      "body",
    );
  });

  it("accepts the conversation id in lower case", async () => {
    const { client, conversation } = await setupConversation();

    const note = await createNote(client, conversation.id.toLowerCase(), "Lower case");

    expect(note.conversation_id).toBe(conversation.id);
  });

  it.each([
    ["a missing body", {}],
    ["an empty body", { body: "" }],
    ["a blank body", { body: "  \n\t " }],
    ["a null body", { body: null }],
    ["a body that is not a string", { body: 42 }],
  ])("refuses %s with 422 naming body", async (_, body) => {
    const { client, conversation } = await setupConversation();

    expectValidationError(await client.post(`/conversations/${conversation.id}/notes`, { body }), "body");
    expect(await listNotes(client, conversation.id)).toEqual([]);
  });

  it("refuses a request without a JSON body with 422 naming body", async () => {
    const { client, conversation } = await setupConversation();

    expectValidationError(await client.post(`/conversations/${conversation.id}/notes`), "body");
  });

  it("refuses an unknown field with 422 naming it", async () => {
    const { client, conversation } = await setupConversation();

    expectValidationError(
      await client.post(`/conversations/${conversation.id}/notes`, { body: { body: "Hi", author: "Ada" } }),
      "author",
    );
    expect(await listNotes(client, conversation.id)).toEqual([]);
  });

  it("answers 404 resource_not_found for an unknown conversation", async () => {
    const { client } = await setup();

    expectError(
      await client.post(`/conversations/${UNKNOWN_CONVERSATION}/notes`, { body: { body: "Hi" } }),
      404,
      "resource_not_found",
    );
    expectError(
      await client.post("/conversations/not-an-id/notes", { body: { body: "Hi" } }),
      404,
      "resource_not_found",
    );
  });

  it("adds notes to a closed conversation and to a manual record", async () => {
    const { client, conversation } = await setupConversation();
    await client.post(`/conversations/${conversation.id}/close`);
    const contact = await client.post("/contacts", { body: {} });
    const manual = await client.post("/conversations", { body: { contact_id: contact.body.id } });

    expect((await createNote(client, conversation.id, "After closing")).conversation_id).toBe(conversation.id);
    expect((await createNote(client, manual.body.id, "Manual")).conversation_id).toBe(manual.body.id);
  });
});

describe("GET /conversations/{conversation_id}/notes", () => {
  it("lists the conversation's notes newest first and pages with a cursor", async () => {
    const { client, conversation } = await setupConversation();
    const first = await createNote(client, conversation.id, "First");
    const second = await createNote(client, conversation.id, "Second");
    const third = await createNote(client, conversation.id, "Third");

    const page = await client.get(`/conversations/${conversation.id}/notes`, { query: { limit: 2 } });

    expect(page.status).toBe(200);
    expect(page.body.object).toBe("list");
    expect(page.body.data).toEqual([third, second]);
    expect(page.body.pagination).toEqual({ has_more: true, next_cursor: expect.any(String) });
    const next = await client.get(`/conversations/${conversation.id}/notes`, {
      query: { limit: 2, after: page.body.pagination.next_cursor },
    });
    expect(next.body.data).toEqual([first]);
    expect(next.body.pagination).toEqual({ has_more: false, next_cursor: null });
    const all = await walkList(client, `/conversations/${conversation.id}/notes`, { limit: 1 });
    expect(all).toEqual([third, second, first]);
  });

  it("lists only the notes of the conversation asked for", async () => {
    const { client, conversation } = await setupConversation();
    const other = await createConversation(client);
    const mine = await createNote(client, conversation.id, "Mine");
    const theirs = await createNote(client, other.id, "Theirs");

    expect(await listNotes(client, conversation.id)).toEqual([mine]);
    expect(await listNotes(client, other.id)).toEqual([theirs]);
  });

  it("answers an empty list for a conversation without notes", async () => {
    const { client, conversation } = await setupConversation();

    const response = await client.get(`/conversations/${conversation.id}/notes`);

    expect(response.body).toEqual({ object: "list", data: [], pagination: { has_more: false, next_cursor: null } });
  });

  it("refuses a cursor of another conversation's notes with 422 invalid_cursor", async () => {
    const { client, conversation } = await setupConversation();
    const other = await createConversation(client);
    await createNote(client, other.id, "One");
    await createNote(client, other.id, "Two");
    const page = await client.get(`/conversations/${other.id}/notes`, { query: { limit: 1 } });

    expectError(
      await client.get(`/conversations/${conversation.id}/notes`, {
        query: { after: page.body.pagination.next_cursor },
      }),
      422,
      "invalid_cursor",
    );
    expectError(
      await client.get(`/conversations/${conversation.id}/notes`, { query: { after: "nope" } }),
      422,
      "invalid_cursor",
    );
  });

  it.each([
    ["limit", "0"],
    ["limit", "101"],
    ["author", "Ada"],
  ])("refuses %s=%s with 422 naming it", async (param, value) => {
    const { client, conversation } = await setupConversation();

    expectValidationError(
      await client.get(`/conversations/${conversation.id}/notes`, { query: { [param]: value } }),
      param,
    );
  });

  it("answers 404 resource_not_found for an unknown conversation", async () => {
    const { client } = await setup();

    expectError(await client.get(`/conversations/${UNKNOWN_CONVERSATION}/notes`), 404, "resource_not_found");
  });
});

describe("deleting the contact", () => {
  it("never fails with 500 when the contact is deleted while a note is being added", async () => {
    const { client } = await setup();
    for (let round = 0; round < 12; round++) {
      const conversation = await createConversation(client);

      const [note, deleted] = await Promise.all([
        client.post(`/conversations/${conversation.id}/notes`, { body: { body: `Round ${round}` } }),
        client.delete(`/contacts/${conversation.contact_id}`),
      ]);

      expect(deleted.status).toBe(200);
      expect([201, 404], JSON.stringify(note.body)).toContain(note.status);
      expectError(await client.get(`/conversations/${conversation.id}/notes`), 404, "resource_not_found");
    }
  });
});

describe("notes stay internal", () => {
  it("appear nowhere but their own list: not in the conversation, not in lists, not in events", async () => {
    const { org, client, conversation } = await setupConversation();
    const eventsBefore = await eventTypes(org.id);

    await createNote(client, conversation.id, "Secret remark");

    const fetched = await client.get(`/conversations/${conversation.id}`);
    expect(fetched.body).toEqual(conversation);
    expect(JSON.stringify(fetched.body)).not.toContain("Secret remark");
    const list = await client.get("/conversations");
    expect(list.body.data).toEqual([conversation]);
    const contact = await client.get(`/contacts/${conversation.contact_id}`);
    expect(JSON.stringify(contact.body)).not.toContain("Secret remark");
    expect(await eventTypes(org.id)).toEqual(eventsBefore);
    const messages = await client.get(`/conversations/${conversation.id}/messages`);
    expect(messages.status).toBe(200);
    expect(messages.body.data).toEqual([]);
  });
});

describe("isolation", () => {
  it("hides the notes of another organization's conversation", async () => {
    const owner = await setupConversation();
    const other = await setup();
    await createNote(owner.client, owner.conversation.id, "Private");

    expectError(await other.client.get(`/conversations/${owner.conversation.id}/notes`), 404, "resource_not_found");
    expectError(
      await other.client.post(`/conversations/${owner.conversation.id}/notes`, { body: { body: "Intrusion" } }),
      404,
      "resource_not_found",
    );
    expect((await listNotes(owner.client, owner.conversation.id)).map((note) => note.body)).toEqual(["Private"]);
  });

  it("hides the notes of the other environment's conversation", async () => {
    const { client, live, conversation } = await setupConversation();
    await createNote(client, conversation.id, "Sandbox note");
    const liveConversation = await createConversation(live);
    await createNote(live, liveConversation.id, "Live note");

    expectError(await live.get(`/conversations/${conversation.id}/notes`), 404, "resource_not_found");
    expectError(
      await live.post(`/conversations/${conversation.id}/notes`, { body: { body: "x" } }),
      404,
      "resource_not_found",
    );
    expectError(await client.get(`/conversations/${liveConversation.id}/notes`), 404, "resource_not_found");
    expect((await listNotes(live, liveConversation.id)).map((note) => note.body)).toEqual(["Live note"]);
    expect((await listNotes(client, conversation.id)).map((note) => note.body)).toEqual(["Sandbox note"]);
  });

  it("needs notes:read and notes:write, not conversations scopes", async () => {
    const { org, client, conversation } = await setupConversation();
    const restricted = await createApiKey(api.context.db, {
      organizationId: org.id,
      environment: "test",
      scopes: ["conversations:read", "conversations:write"],
    });
    const limited = as(api, restricted.key);

    expectError(await limited.get(`/conversations/${conversation.id}/notes`), 403, "insufficient_scope");
    expectError(
      await limited.post(`/conversations/${conversation.id}/notes`, { body: { body: "x" } }),
      403,
      "insufficient_scope",
    );
    expect(await listNotes(client, conversation.id)).toEqual([]);
  });
});

describe("PATCH and DELETE /conversations/{conversation_id}/notes/{note_id}", () => {
  const path = (conversationId: string, noteId: string) => `/conversations/${conversationId}/notes/${noteId}`;

  async function otherKey(organizationId: string, scopes: Scope[] = ["notes:read", "notes:write"]) {
    const created = await createApiKey(api.context.db, { organizationId, environment: "test", scopes });
    return { id: created.id, client: as(api, created.key) };
  }

  it("records the author key on every note", async () => {
    const { org, client, conversation } = await setupConversation();
    const colleague = await otherKey(org.id);

    const mine = await createNote(client, conversation.id, "Mine");
    const theirs = await createNote(colleague.client, conversation.id, "Theirs");

    expect(mine.author_key_id).toBe((await client.get("/api-keys/current")).body.id);
    expect(theirs.author_key_id).toBe(colleague.id);
  });

  it("lets the author edit the body with 200, kept exactly as written", async () => {
    const { client, conversation } = await setupConversation();
    const note = await createNote(client, conversation.id, "First draft");

    const response = await client.patch(path(conversation.id, note.id), { body: { body: "  Final\n  text" } });

    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ...note, body: "  Final\n  text", updated_at: expect.stringMatching(TIMESTAMP) });
    expect(await listNotes(client, conversation.id)).toEqual([response.body]);
    expect((await client.patch(path(conversation.id.toLowerCase(), note.id.toLowerCase()), { body: {} })).status).toBe(
      200,
    );
  });

  it("refuses another key of the same environment with 403 permission_denied, and changes nothing", async () => {
    const { org, client, conversation } = await setupConversation();
    const note = await createNote(client, conversation.id, "Mine");
    const colleague = await otherKey(org.id);

    expectError(
      await colleague.client.patch(path(conversation.id, note.id), { body: { body: "Hijacked" } }),
      403,
      "permission_denied",
    );
    expectError(await colleague.client.delete(path(conversation.id, note.id)), 403, "permission_denied");
    expect(await listNotes(client, conversation.id)).toEqual([note]);
  });

  it("refuses a note written before authors were recorded, for every key", async () => {
    const { client, conversation } = await setupConversation();
    const note = await createNote(client, conversation.id, "Old");
    await api.client.sql`update notes set author_key_id = null where id = ${note.id}`;

    expectError(await client.patch(path(conversation.id, note.id), { body: { body: "x" } }), 403, "permission_denied");
    expectError(await client.delete(path(conversation.id, note.id)), 403, "permission_denied");
    expect((await listNotes(client, conversation.id)).map((found) => found.body)).toEqual(["Old"]);
  });

  it.each([
    ["an empty body", { body: "" }, "body"],
    ["a blank body", { body: "  " }, "body"],
    ["a body of 10,001 characters", { body: "n".repeat(10_001) }, "body"],
    ["a null body", { body: null }, "body"],
    ["an unknown field", { bdy: "x" }, "bdy"],
  ])("refuses %s with 422", async (_, body, param) => {
    const { client, conversation } = await setupConversation();
    const note = await createNote(client, conversation.id, "Kept");

    expectValidationError(await client.patch(path(conversation.id, note.id), { body }), param);
    expect(await listNotes(client, conversation.id)).toEqual([note]);
  });

  it("lets the author delete the note with 200 Deleted, and records the deletion without the body", async () => {
    const { org, client, conversation } = await setupConversation();
    const note = await createNote(client, conversation.id, "Secret remark");
    const kept = await createNote(client, conversation.id, "Kept");
    const eventsBefore = await eventTypes(org.id);

    const response = await client.delete(path(conversation.id, note.id));

    expect(response.status).toBe(200);
    expect(response.body).toEqual({ object: "note", id: note.id, deleted: true });
    expect(await listNotes(client, conversation.id)).toEqual([kept]);
    expectError(await client.delete(path(conversation.id, note.id)), 404, "resource_not_found");
    expectError(await client.patch(path(conversation.id, note.id), { body: { body: "x" } }), 404, "resource_not_found");
    const records = await api.client.sql`select * from note_deletions where note_id = ${note.id}`;
    expect(records).toEqual([
      expect.objectContaining({
        note_id: note.id,
        conversation_id: conversation.id,
        author_key_id: note.author_key_id,
        deleted_by_key_id: note.author_key_id,
        organization_id: org.id,
        environment: "test",
      }),
    ]);
    expect(JSON.stringify(records)).not.toContain("Secret remark");
    expect(await eventTypes(org.id)).toEqual(eventsBefore);
  });

  it("answers 404 for a note of another conversation, organization or environment", async () => {
    const { client, live, conversation } = await setupConversation();
    const other = await createConversation(client);
    const note = await createNote(client, conversation.id, "Mine");
    const stranger = await setup();

    expectError(await client.patch(path(other.id, note.id), { body: { body: "x" } }), 404, "resource_not_found");
    expectError(await client.delete(path(other.id, note.id)), 404, "resource_not_found");
    expectError(
      await client.delete(path(conversation.id, "note_01ARZ3NDEKTSV4RRFFQ69G5FAV")),
      404,
      "resource_not_found",
    );
    expectError(await live.delete(path(conversation.id, note.id)), 404, "resource_not_found");
    expectError(await stranger.client.delete(path(conversation.id, note.id)), 404, "resource_not_found");
    expect(await listNotes(client, conversation.id)).toEqual([note]);
  });

  it("needs notes:write", async () => {
    const { org, client, conversation } = await setupConversation();
    const note = await createNote(client, conversation.id, "Mine");
    const reader = await otherKey(org.id, ["notes:read"]);

    expectError(
      await reader.client.patch(path(conversation.id, note.id), { body: { body: "x" } }),
      403,
      "insufficient_scope",
    );
    expectError(await reader.client.delete(path(conversation.id, note.id)), 403, "insufficient_scope");
  });
});
