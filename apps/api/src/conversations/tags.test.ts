import { describe, expect, it } from "vitest";
import {
  type ApiResponse,
  as,
  type Client,
  expectError,
  expectValidationError,
  setupOrganization,
  storedEvents,
  useTestApi,
} from "../../test/harness.js";
import { createApiKey } from "../organizations/api-keys.js";

const api = useTestApi();

const UNKNOWN_TAG = "tag_01ARZ3NDEKTSV4RRFFQ69G5FAV";
const UNKNOWN_CONVERSATION = "conv_01ARZ3NDEKTSV4RRFFQ69G5FAV";

const setup = () => setupOrganization(api);

/** A conversation on a fresh contact, in a fresh organization. */
async function setupConversation(contactBody: Record<string, unknown> = {}) {
  const context = await setup();
  const contact = await createContact(context.client, contactBody);
  const response = await context.client.post("/conversations", { body: { contact_id: contact.id } });
  expect(response.status).toBe(201);
  return { ...context, contact, conversation: response.body };
}

async function createContact(client: Client, body: Record<string, unknown> = {}) {
  const response = await client.post("/contacts", { body });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

async function createTag(client: Client, name: string) {
  const response = await client.post("/tags", { body: { name } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

async function getContact(client: Client, id: string) {
  const response = await client.get(`/contacts/${id}`);
  expect(response.status).toBe(200);
  return response.body;
}

async function getConversation(client: Client, id: string) {
  const response = await client.get(`/conversations/${id}`);
  expect(response.status).toBe(200);
  return response.body;
}

function addTag(client: Client, conversationId: string, tagId: string) {
  return client.post(`/conversations/${conversationId}/tags`, { body: { tag_id: tagId } });
}

function removeTag(client: Client, conversationId: string, tagId: string) {
  return client.delete(`/conversations/${conversationId}/tags/${tagId}`);
}

const eventsOf = (organizationId: string, environment?: "live" | "test") =>
  storedEvents(api, organizationId, environment);

async function eventsDuring(organizationId: string, run: () => Promise<unknown>) {
  const before = (await eventsOf(organizationId)).length;
  await run();
  return (await eventsOf(organizationId)).slice(before);
}

describe("POST /conversations/{conversation_id}/tags", () => {
  it("applies the tag to the contact and returns the conversation with 200", async () => {
    const { client, contact, conversation } = await setupConversation();
    const tag = await createTag(client, "VIP");

    const response = await addTag(client, conversation.id, tag.id);

    expect(response.status).toBe(200);
    expect(response.body).toEqual(await getConversation(client, conversation.id));
    expect(response.body.id).toBe(conversation.id);
    expect((await getContact(client, contact.id)).tags).toEqual([tag.id]);
  });

  it("adds to the contact's existing tags, and every conversation of the contact sees them", async () => {
    const { client, contact, conversation } = await setupConversation();
    const vip = await createTag(client, "VIP");
    const lead = await createTag(client, "Lead");
    await client.patch(`/contacts/${contact.id}`, { body: { tags: [vip.id] } });
    const sibling = await client.post("/conversations", { body: { contact_id: contact.id } });

    expect((await addTag(client, sibling.body.id, lead.id)).status).toBe(200);

    expect((await getContact(client, contact.id)).tags).toEqual([vip.id, lead.id]);
    const tagged = await client.get("/conversations", { query: { tag_id: lead.id } });
    expect(tagged.body.data.map((item: { id: string }) => item.id)).toEqual([sibling.body.id, conversation.id]);
  });

  it("accepts a tag id in lower case", async () => {
    const { client, contact, conversation } = await setupConversation();
    const tag = await createTag(client, "VIP");

    expect((await addTag(client, conversation.id.toLowerCase(), tag.id.toLowerCase())).status).toBe(200);

    expect((await getContact(client, contact.id)).tags).toEqual([tag.id]);
  });

  it("records tag.added with the tag and the contact as GET returns them", async () => {
    const { org, client, contact, conversation } = await setupConversation();
    const tag = await createTag(client, "VIP");

    const events = await eventsDuring(org.id, () => addTag(client, conversation.id, tag.id));

    expect(events.map((event) => event.type)).toEqual(["tag.added"]);
    expect(events[0]?.data).toEqual({ tag, contact: await getContact(client, contact.id) });
  });

  it("changes nothing and records nothing when the contact already has the tag", async () => {
    const { org, client, contact, conversation } = await setupConversation();
    const tag = await createTag(client, "VIP");
    await addTag(client, conversation.id, tag.id);
    const before = await getContact(client, contact.id);

    let response: ApiResponse | undefined;
    const events = await eventsDuring(org.id, async () => {
      response = await addTag(client, conversation.id, tag.id);
    });

    expect(response?.status).toBe(200);
    expect(response?.body).toEqual(await getConversation(client, conversation.id));
    expect(events).toEqual([]);
    expect(await getContact(client, contact.id)).toEqual(before);
  });

  it("refuses the 51st tag with 422 naming tag_id, and changes nothing", async () => {
    const { client } = await setup();
    const tags = [];
    for (let index = 0; index < 51; index++) tags.push(await createTag(client, `Tag ${index}`));
    const fifty = tags.slice(0, 50).map((tag) => tag.id);
    const contact = await createContact(client, { tags: fifty });
    const conversation = (await client.post("/conversations", { body: { contact_id: contact.id } })).body;
    const before = await getContact(client, contact.id);
    const last = tags[50]?.id ?? "";

    expectValidationError(await addTag(client, conversation.id, last), "tag_id");
    expect(await getContact(client, contact.id)).toEqual(before);
    expect((await addTag(client, conversation.id, fifty[0] ?? "")).status).toBe(200);
    expect((await removeTag(client, conversation.id, fifty[0] ?? "")).status).toBe(200);
    expect((await addTag(client, conversation.id, last)).status).toBe(200);
    expect((await getContact(client, contact.id)).tags).toHaveLength(50);
  });

  it("lets only one of two concurrent additions take the 50th place", async () => {
    const { client } = await setup();
    const tags = [];
    for (let index = 0; index < 51; index++) tags.push(await createTag(client, `Tag ${index}`));
    const contact = await createContact(client, { tags: tags.slice(0, 49).map((tag) => tag.id) });
    const first = (await client.post("/conversations", { body: { contact_id: contact.id } })).body;
    const second = (await client.post("/conversations", { body: { contact_id: contact.id } })).body;

    const responses = await Promise.all([
      addTag(client, first.id, tags[49]?.id ?? ""),
      addTag(client, second.id, tags[50]?.id ?? ""),
    ]);

    expect(responses.map((response) => response.status).sort()).toEqual([200, 422]);
    expect((await getContact(client, contact.id)).tags).toHaveLength(50);
  });

  it("refuses an unknown tag with 404 resource_not_found naming tag_id", async () => {
    const { org, client, contact, conversation } = await setupConversation();

    const events = await eventsDuring(org.id, async () => {
      expectError(await addTag(client, conversation.id, UNKNOWN_TAG), 404, "resource_not_found", "tag_id");
    });

    expect(events).toEqual([]);
    expect((await getContact(client, contact.id)).tags).toEqual([]);
  });

  it("refuses a tag of the other environment or of another organization with 404", async () => {
    const { client, live, contact, conversation } = await setupConversation();
    const other = await setup();
    const liveTag = await createTag(live, "Live only");
    const foreignTag = await createTag(other.client, "Foreign");

    expectError(await addTag(client, conversation.id, liveTag.id), 404, "resource_not_found", "tag_id");
    expectError(await addTag(client, conversation.id, foreignTag.id), 404, "resource_not_found", "tag_id");
    expect((await getContact(client, contact.id)).tags).toEqual([]);
  });

  it.each([
    ["tag_id", {}],
    ["tag_id", { tag_id: "vip" }],
    ["tag_id", { tag_id: "cnt_01ARZ3NDEKTSV4RRFFQ69G5FAV" }],
    ["tag_id", { tag_id: null }],
    ["tags", { tag_id: UNKNOWN_TAG, tags: [UNKNOWN_TAG] }],
  ])("refuses a body naming %s with 422", async (param, body) => {
    const { client, conversation } = await setupConversation();

    expectValidationError(await client.post(`/conversations/${conversation.id}/tags`, { body }), param);
  });

  it("answers 404 resource_not_found for an unknown conversation", async () => {
    const { client } = await setup();
    const tag = await createTag(client, "VIP");

    expectError(await addTag(client, UNKNOWN_CONVERSATION, tag.id), 404, "resource_not_found");
  });

  it("refuses a conversation of the other environment with 404, even with a tag of its environment", async () => {
    const { client, live, conversation } = await setupConversation();
    const liveTag = await createTag(live, "Live");

    expectError(await addTag(live, conversation.id, liveTag.id), 404, "resource_not_found");
    expect((await getConversation(client, conversation.id)).id).toBe(conversation.id);
  });
});

describe("DELETE /conversations/{conversation_id}/tags/{tag_id}", () => {
  it("removes the tag from the contact and returns the conversation with 200", async () => {
    const { client } = await setup();
    const vip = await createTag(client, "VIP");
    const lead = await createTag(client, "Lead");
    const contact = await createContact(client, { tags: [vip.id, lead.id] });
    const conversation = (await client.post("/conversations", { body: { contact_id: contact.id } })).body;

    const response = await removeTag(client, conversation.id, vip.id);

    expect(response.status).toBe(200);
    expect(response.body).toEqual(await getConversation(client, conversation.id));
    expect((await getContact(client, contact.id)).tags).toEqual([lead.id]);
  });

  it("accepts the tag id in lower case", async () => {
    const { client } = await setup();
    const vip = await createTag(client, "VIP");
    const contact = await createContact(client, { tags: [vip.id] });
    const conversation = (await client.post("/conversations", { body: { contact_id: contact.id } })).body;

    expect((await removeTag(client, conversation.id, vip.id.toLowerCase())).status).toBe(200);

    expect((await getContact(client, contact.id)).tags).toEqual([]);
  });

  it("records tag.removed with the tag and the contact as GET returns them", async () => {
    const { org, client } = await setup();
    const vip = await createTag(client, "VIP");
    const contact = await createContact(client, { tags: [vip.id] });
    const conversation = (await client.post("/conversations", { body: { contact_id: contact.id } })).body;

    const events = await eventsDuring(org.id, () => removeTag(client, conversation.id, vip.id));

    expect(events.map((event) => event.type)).toEqual(["tag.removed"]);
    expect(events[0]?.data).toEqual({ tag: vip, contact: await getContact(client, contact.id) });
  });

  it("changes nothing and records nothing when the contact does not have the tag", async () => {
    const { org, client, contact, conversation } = await setupConversation();
    const tag = await createTag(client, "VIP");
    const before = await getContact(client, contact.id);

    let response: ApiResponse | undefined;
    const events = await eventsDuring(org.id, async () => {
      response = await removeTag(client, conversation.id, tag.id);
    });

    expect(response?.status).toBe(200);
    expect(events).toEqual([]);
    expect(await getContact(client, contact.id)).toEqual(before);
  });

  it("answers 404 resource_not_found for an unknown or malformed tag", async () => {
    const { client, conversation } = await setupConversation();

    expectError(await removeTag(client, conversation.id, UNKNOWN_TAG), 404, "resource_not_found");
    expectError(await removeTag(client, conversation.id, "vip"), 404, "resource_not_found");
  });

  it("refuses a tag of the other environment with 404, leaving the other environment's contacts alone", async () => {
    const { client, live, conversation } = await setupConversation();
    const liveTag = await createTag(live, "Live");
    const liveContact = await createContact(live, { tags: [liveTag.id] });

    expectError(await removeTag(client, conversation.id, liveTag.id), 404, "resource_not_found");
    expect((await getContact(live, liveContact.id)).tags).toEqual([liveTag.id]);
  });

  it("answers 404 resource_not_found for an unknown conversation", async () => {
    const { client } = await setup();
    const tag = await createTag(client, "VIP");

    expectError(await removeTag(client, UNKNOWN_CONVERSATION, tag.id), 404, "resource_not_found");
  });
});

describe("scopes", () => {
  it("needs tags:write, not conversations:write", async () => {
    const { org, client, conversation } = await setupConversation();
    const tag = await createTag(client, "VIP");
    const restricted = await createApiKey(api.context.db, {
      organizationId: org.id,
      environment: "test",
      scopes: ["conversations:read", "conversations:write"],
    });
    const limited = as(api, restricted.key);

    expectError(await addTag(limited, conversation.id, tag.id), 403, "insufficient_scope");
    expectError(await removeTag(limited, conversation.id, tag.id), 403, "insufficient_scope");
  });
});
