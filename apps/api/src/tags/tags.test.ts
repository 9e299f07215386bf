import { describe, expect, it } from "vitest";
import {
  type ApiResponse,
  type Client,
  expectError,
  expectValidationError,
  setupOrganization,
  storedEvents,
  TIMESTAMP,
  useTestApi,
  walkList,
} from "../../test/harness.js";

const api = useTestApi();

const TAG_ID = /^tag_[0-9A-HJKMNP-TV-Z]{26}$/;

const setup = () => setupOrganization(api);

async function createTag(client: Client, body: Record<string, unknown>) {
  const response = await client.post("/tags", { body });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

async function createContact(client: Client, body: Record<string, unknown>) {
  const response = await client.post("/contacts", { body });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

async function getContact(client: Client, id: string) {
  const response = await client.get(`/contacts/${id}`);
  expect(response.status).toBe(200);
  return response.body;
}

async function tagIds(client: Client) {
  return (await walkList(client, "/tags", { limit: 100 })).map((tag) => tag.id);
}

const eventsOf = (organizationId: string, environment?: "live" | "test") =>
  storedEvents(api, organizationId, environment);

describe("POST /tags", () => {
  it("creates a tag with name and color with 201", async () => {
    const { client } = await setup();

    const response = await client.post("/tags", { body: { name: "VIP", color: "#1A2b3C" } });

    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      object: "tag",
      id: expect.stringMatching(TAG_ID),
      name: "VIP",
      color: "#1A2b3C",
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect(await walkList(client, "/tags")).toEqual([response.body]);
  });

  it("creates a tag without color, which is then null", async () => {
    const { client } = await setup();

    const response = await client.post("/tags", { body: { name: "Lead" } });

    expect(response.status).toBe(201);
    expect(response.body.color).toBeNull();
  });

  it("trims the name", async () => {
    const { client } = await setup();

    const response = await client.post("/tags", { body: { name: "  Spaced  " } });

    expect(response.status).toBe(201);
    expect(response.body.name).toBe("Spaced");
  });

  it.each([
    ["a missing name", {}, "name"],
    ["an empty name", { name: "" }, "name"],
    ["a blank name", { name: "   " }, "name"],
    ["a name that is not a string", { name: 5 }, "name"],
    ["a colour name", { name: "A", color: "red" }, "color"],
    ["a short hex colour", { name: "A", color: "#123" }, "color"],
    ["a colour without #", { name: "A", color: "1A2B3C" }, "color"],
    ["a seven-digit colour", { name: "A", color: "#1A2B3C4" }, "color"],
    ["a non-hex colour", { name: "A", color: "#GGGGGG" }, "color"],
    ["an unknown field", { name: "A", priority: 1 }, "priority"],
  ])("refuses %s with 422 naming the field", async (_, body, param) => {
    const { client } = await setup();

    const response = await client.post("/tags", { body });

    expectValidationError(response, param);
    expect(await tagIds(client)).toEqual([]);
  });

  it("refuses a name already taken in the environment, case-insensitively, with 409", async () => {
    const { client } = await setup();
    const vip = await createTag(client, { name: "VIP" });

    expectError(await client.post("/tags", { body: { name: "VIP" } }), 409, "resource_already_exists", "name");
    expectError(await client.post("/tags", { body: { name: "vip" } }), 409, "resource_already_exists", "name");
    expectError(await client.post("/tags", { body: { name: " Vip " } }), 409, "resource_already_exists", "name");
    expect(await tagIds(client)).toEqual([vip.id]);
  });

  it("allows the same name in the other environment and in another organization", async () => {
    const { client, live } = await setup();
    const other = await setup();
    const testTag = await createTag(client, { name: "VIP" });

    const liveTag = await live.post("/tags", { body: { name: "VIP" } });
    const foreignTag = await other.client.post("/tags", { body: { name: "vip" } });

    expect(liveTag.status).toBe(201);
    expect(foreignTag.status).toBe(201);
    expect(new Set([testTag.id, liveTag.body.id, foreignTag.body.id]).size).toBe(3);
  });
});

describe("PATCH /tags/{tag_id}", () => {
  it("changes name and color", async () => {
    const { client } = await setup();
    const tag = await createTag(client, { name: "VIP", color: "#000000" });

    const response = await client.patch(`/tags/${tag.id}`, { body: { name: "Gold", color: "#FFD700" } });

    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      ...tag,
      name: "Gold",
      color: "#FFD700",
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect(Date.parse(response.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(tag.updated_at));
    expect(await walkList(client, "/tags")).toEqual([response.body]);
  });

  it("clears color given null and keeps the name when absent", async () => {
    const { client } = await setup();
    const tag = await createTag(client, { name: "VIP", color: "#000000" });

    const response = await client.patch(`/tags/${tag.id}`, { body: { color: null } });

    expect(response.status).toBe(200);
    expect(response.body.name).toBe("VIP");
    expect(response.body.color).toBeNull();
  });

  it("keeps the color when only the name changes", async () => {
    const { client } = await setup();
    const tag = await createTag(client, { name: "VIP", color: "#000000" });

    const response = await client.patch(`/tags/${tag.id}`, { body: { name: "V.I.P." } });

    expect(response.body).toMatchObject({ name: "V.I.P.", color: "#000000" });
  });

  it("lets a tag change the case of its own name", async () => {
    const { client } = await setup();
    const tag = await createTag(client, { name: "vip" });

    const response = await client.patch(`/tags/${tag.id}`, { body: { name: "VIP" } });

    expect(response.status).toBe(200);
    expect(response.body.name).toBe("VIP");
  });

  it("refuses a name another tag has, case-insensitively, with 409 and changes nothing", async () => {
    const { client } = await setup();
    await createTag(client, { name: "VIP" });
    const lead = await createTag(client, { name: "Lead" });

    const response = await client.patch(`/tags/${lead.id}`, { body: { name: "vip", color: "#111111" } });

    expectError(response, 409, "resource_already_exists", "name");
    expect((await walkList(client, "/tags")).find((tag) => tag.id === lead.id)).toEqual(lead);
  });

  it.each([
    ["null name", { name: null }, "name"],
    ["empty name", { name: "" }, "name"],
    ["bad color", { color: "blue" }, "color"],
    ["unknown field", { id: "tag_01ARZ3NDEKTSV4RRFFQ69G5FAV" }, "id"],
  ])("refuses %s with 422", async (_, body, param) => {
    const { client } = await setup();
    const tag = await createTag(client, { name: "VIP" });

    expectValidationError(await client.patch(`/tags/${tag.id}`, { body }), param);
  });

  it("answers 404 resource_not_found for an unknown tag", async () => {
    const { client } = await setup();

    const response = await client.patch("/tags/tag_01ARZ3NDEKTSV4RRFFQ69G5FAV", { body: { name: "X" } });

    expectError(response, 404, "resource_not_found");
  });
});

describe("DELETE /tags/{tag_id}", () => {
  it("answers 200 with the Deleted object and the tag leaves the list", async () => {
    const { client } = await setup();
    const tag = await createTag(client, { name: "VIP" });
    const kept = await createTag(client, { name: "Lead" });

    const response = await client.delete(`/tags/${tag.id}`);

    expect(response.status).toBe(200);
    expect(response.body).toEqual({ object: "tag", id: tag.id, deleted: true });
    expect(await tagIds(client)).toEqual([kept.id]);
    expectError(await client.delete(`/tags/${tag.id}`), 404, "resource_not_found");
    expectError(await client.patch(`/tags/${tag.id}`, { body: { name: "Back" } }), 404, "resource_not_found");
  });

  it("removes the tag from every contact that had it and records tag.removed for each", async () => {
    const { org, client } = await setup();
    const vip = await createTag(client, { name: "VIP", color: "#000000" });
    const lead = await createTag(client, { name: "Lead" });
    const first = await createContact(client, { name: "First", tags: [vip.id, lead.id] });
    const second = await createContact(client, { name: "Second", tags: [vip.id] });
    const untouched = await createContact(client, { name: "Untouched", tags: [lead.id] });
    const before = (await eventsOf(org.id)).length;

    const response = await client.delete(`/tags/${vip.id}`);

    expect(response.status).toBe(200);
    const firstAfter = await getContact(client, first.id);
    const secondAfter = await getContact(client, second.id);
    expect(firstAfter.tags).toEqual([lead.id]);
    expect(secondAfter.tags).toEqual([]);
    expect(await getContact(client, untouched.id)).toEqual(untouched);
    const events = (await eventsOf(org.id)).slice(before);
    expect(events.map((event) => event.type)).toEqual(["tag.removed", "tag.removed"]);
    const byContact = new Map(events.map((event) => [event.data.contact.id, event.data]));
    expect(byContact.get(first.id)).toEqual({ tag: vip, contact: firstAfter });
    expect(byContact.get(second.id)).toEqual({ tag: vip, contact: secondAfter });
    const tagged = await client.get("/contacts", { query: { tag_id: vip.id } });
    expect(tagged.body.data).toEqual([]);
  });

  it("frees the name for a new tag", async () => {
    const { client } = await setup();
    const tag = await createTag(client, { name: "VIP" });
    await client.delete(`/tags/${tag.id}`);

    const again = await client.post("/tags", { body: { name: "VIP" } });

    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(tag.id);
  });

  it("answers 404 resource_not_found for an unknown or malformed id", async () => {
    const { client } = await setup();

    expectError(await client.delete("/tags/tag_01ARZ3NDEKTSV4RRFFQ69G5FAV"), 404, "resource_not_found");
    expectError(await client.delete("/tags/vip"), 404, "resource_not_found");
  });
});

describe("a tag deleted while a contact is being tagged", () => {
  /** Resolves once some other session waits on a lock held by the session `pid`; bounded. */
  async function waitUntilBlockedBy(pid: number) {
    for (let attempt = 0; attempt < 500; attempt++) {
      const [row] = await api.client.sql<{ waiting: number }[]>`
        select count(*)::int as waiting from pg_stat_activity where ${pid}::int = any(pg_blocking_pids(pid))`;
      if ((row?.waiting ?? 0) > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`nothing waited on session ${pid}`);
  }

  /**
   * Runs `request` while another transaction is deleting the tag as DELETE /tags does,
   * and commits that deletion only once the request waits on it.
   */
  async function duringTagDeletion(tagId: string, request: () => Promise<ApiResponse>) {
    let pending: Promise<ApiResponse> | undefined;
    await api.client.sql.begin(async (tx) => {
      const [session] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`;
      await tx`select id from tags where id = ${tagId} for update`;
      await tx`delete from contact_tags where tag_id = ${tagId}`;
      await tx`delete from tags where id = ${tagId}`;
      pending = request();
      await waitUntilBlockedBy(session?.pid ?? -1);
    });
    if (!pending) throw new Error("request not sent");
    return pending;
  }

  it("answers 404 resource_not_found to a PATCH, never a 500, and leaves the contact untagged", async () => {
    const { org, client } = await setup();
    const tag = await createTag(client, { name: "VIP" });
    const contact = await createContact(client, { name: "Ada" });
    const before = await eventsOf(org.id);

    const response = await duringTagDeletion(tag.id, () =>
      client.patch(`/contacts/${contact.id}`, { body: { tags: [tag.id] } }),
    );

    expectError(response, 404, "resource_not_found", "tags.0");
    expect(await getContact(client, contact.id)).toEqual(contact);
    expect(await eventsOf(org.id)).toEqual(before);
  });

  it("answers 404 resource_not_found to a create, never a 500, and creates nothing", async () => {
    const { client } = await setup();
    const tag = await createTag(client, { name: "VIP" });

    const response = await duringTagDeletion(tag.id, () =>
      client.post("/contacts", { body: { name: "Ada", tags: [tag.id] } }),
    );

    expectError(response, 404, "resource_not_found", "tags.0");
    const contacts = await client.get("/contacts");
    expect(contacts.body.data).toEqual([]);
  });
});

describe("GET /tags", () => {
  it("lists newest first, page by page", async () => {
    const { client } = await setup();
    const created: string[] = [];
    for (const name of ["one", "two", "three", "four", "five"]) created.push((await createTag(client, { name })).id);
    const newestFirst = [...created].reverse();

    const first = await client.get("/tags", { query: { limit: 2 } });
    const second = await client.get("/tags", { query: { limit: 2, after: first.body.pagination.next_cursor } });
    const third = await client.get("/tags", { query: { limit: 2, after: second.body.pagination.next_cursor } });

    const ids = (response: ApiResponse) => response.body.data.map((tag: { id: string }) => tag.id);
    expect(first.status).toBe(200);
    expect(first.body.object).toBe("list");
    expect(ids(first)).toEqual(newestFirst.slice(0, 2));
    expect(first.body.pagination).toEqual({ has_more: true, next_cursor: expect.any(String) });
    expect(ids(second)).toEqual(newestFirst.slice(2, 4));
    expect(second.body.pagination.has_more).toBe(true);
    expect(ids(third)).toEqual(newestFirst.slice(4));
    expect(third.body.pagination).toEqual({ has_more: false, next_cursor: null });
  });

  it("defaults to 25 per page", async () => {
    const { client } = await setup();
    await Promise.all(Array.from({ length: 26 }, (_, index) => createTag(client, { name: `Tag ${index}` })));

    const page = await client.get("/tags");

    expect(page.body.data).toHaveLength(25);
    expect(page.body.pagination.has_more).toBe(true);
    expect(await tagIds(client)).toHaveLength(26);
  });

  it("does not shift later pages when a tag is created after the cursor was issued", async () => {
    const { client } = await setup();
    const a = await createTag(client, { name: "a" });
    const b = await createTag(client, { name: "b" });
    const c = await createTag(client, { name: "c" });
    const first = await client.get("/tags", { query: { limit: 1 } });
    await createTag(client, { name: "d" });

    const rest = await client.get("/tags", { query: { after: first.body.pagination.next_cursor } });

    expect(first.body.data[0].id).toBe(c.id);
    expect(rest.body.data.map((tag: { id: string }) => tag.id)).toEqual([b.id, a.id]);
  });

  it("refuses a cursor it did not issue, or one of another organization, with 422 invalid_cursor", async () => {
    const { client } = await setup();
    const other = await setup();
    await createTag(other.client, { name: "a" });
    await createTag(other.client, { name: "b" });
    const foreign = await other.client.get("/tags", { query: { limit: 1 } });

    expectError(await client.get("/tags", { query: { after: "made-up" } }), 422, "invalid_cursor");
    expectError(
      await client.get("/tags", { query: { after: foreign.body.pagination.next_cursor } }),
      422,
      "invalid_cursor",
    );
  });

  it("refuses an unknown query parameter and a limit out of range with 422", async () => {
    const { client } = await setup();

    expectValidationError(await client.get("/tags", { query: { name: "VIP" } }), "name");
    expectValidationError(await client.get("/tags", { query: { limit: 0 } }), "limit");
    expectValidationError(await client.get("/tags", { query: { limit: 101 } }), "limit");
  });
});

describe("isolation", () => {
  async function expectInvisible(client: Client, tagId: string) {
    expectError(await client.patch(`/tags/${tagId}`, { body: { name: "Hijack" } }), 404, "resource_not_found");
    expectError(await client.delete(`/tags/${tagId}`), 404, "resource_not_found");
    expect(await tagIds(client)).not.toContain(tagId);
  }

  it("hides a tag of another organization from PATCH, DELETE and the list", async () => {
    const owner = await setup();
    const other = await setup();
    const tag = await createTag(owner.client, { name: "Private" });
    await createTag(other.client, { name: "Theirs" });

    await expectInvisible(other.client, tag.id);
    expect(await walkList(owner.client, "/tags")).toEqual([tag]);
  });

  it("hides a test tag from the live key of the same organization, and the other way round", async () => {
    const { client, live } = await setup();
    const testTag = await createTag(client, { name: "Sandbox" });
    const liveTag = await createTag(live, { name: "Real" });

    await expectInvisible(live, testTag.id);
    await expectInvisible(client, liveTag.id);
    expect(await walkList(client, "/tags")).toEqual([testTag]);
    expect(await walkList(live, "/tags")).toEqual([liveTag]);
  });
});
