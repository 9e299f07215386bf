import { describe, expect, it } from "vitest";
import {
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

const CONTACT_ID = /^cnt_[0-9A-HJKMNP-TV-Z]{26}$/;

const setup = () => setupOrganization(api);

async function createTag(client: Client, name: string) {
  const response = await client.post("/tags", { body: { name } });
  expect(response.status).toBe(201);
  return response.body;
}

async function createField(client: Client, key: string, scope: "contact" | "organization" = "contact") {
  const body = scope === "organization" ? { name: key, key, scope, value: "org value" } : { name: key, key };
  const response = await client.post("/custom-fields", { body });
  expect(response.status).toBe(201);
  return response.body;
}

async function createContact(client: Client, body: Record<string, unknown> = {}) {
  const response = await client.post("/contacts", { body });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

async function getContact(client: Client, id: string) {
  const response = await client.get(`/contacts/${id}`);
  expect(response.status).toBe(200);
  return response.body;
}

async function listIds(client: Client, query: Record<string, string | number | undefined> = {}) {
  const response = await client.get("/contacts", { query: { limit: 100, ...query } });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.data.map((contact: { id: string }) => contact.id);
}

const eventsOf = (organizationId: string, environment?: "live" | "test") =>
  storedEvents(api, organizationId, environment);

/** `n` characters of an email address, valid in every other respect. */
function emailOfLength(length: number): string {
  const local = "a".repeat(64);
  const labels: string[] = [];
  let remaining = length - local.length - 1 - ".com".length;
  while (remaining > 0) {
    const size = Math.min(63, remaining);
    labels.push("b".repeat(size));
    remaining -= size + 1;
  }
  const email = `${local}@${labels.join(".")}.com`;
  if (email.length !== length) throw new Error(`cannot build an email of ${length} characters`);
  return email;
}

function urlOfLength(length: number): string {
  const prefix = "https://example.com/";
  return prefix + "a".repeat(length - prefix.length);
}

describe("POST /contacts", () => {
  it("creates a contact with every field and GET returns it with its tags and custom fields", async () => {
    const { client } = await setup();
    const vip = await createTag(client, "VIP");
    const lead = await createTag(client, "Lead");
    await createField(client, "date_of_birth");
    const input = {
      name: "Ada Lovelace",
      first_name: "Ada",
      last_name: "Lovelace",
      email: "ada@example.com",
      phone: "+441234567890",
      external_id: "crm-1",
      avatar_url: "https://example.com/ada.png",
      tags: [vip.id, lead.id],
      custom_fields: { date_of_birth: "1815-12-10" },
      metadata: { plan: "pro", nested: { seats: 3 } },
    };

    const created = await client.post("/contacts", { body: input });

    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      object: "contact",
      id: expect.stringMatching(CONTACT_ID),
      ...input,
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect(await getContact(client, created.body.id)).toEqual(created.body);
  });

  it("creates a contact from an empty body with every field empty", async () => {
    const { client } = await setup();

    const created = await client.post("/contacts", { body: {} });

    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      object: "contact",
      name: null,
      first_name: null,
      last_name: null,
      email: null,
      phone: null,
      external_id: null,
      avatar_url: null,
      tags: [],
      custom_fields: {},
      metadata: {},
    });
  });

  it("returns the existing contact unchanged with 200 when external_id matches", async () => {
    const { org, client } = await setup();
    const first = await createContact(client, { name: "Original", external_id: "crm-7", email: "first@example.com" });

    const again = await client.post("/contacts", {
      body: { name: "Changed", external_id: "crm-7", email: "second@example.com" },
    });

    expect(again.status).toBe(200);
    expect(again.body).toEqual(first);
    expect(await getContact(client, first.id)).toEqual(first);
    expect(await listIds(client)).toEqual([first.id]);
    const types = (await eventsOf(org.id)).map((event) => event.type);
    expect(types).toEqual(["contact.created"]);
  });

  it("creates a new contact with 201 when external_id matches none", async () => {
    const { client } = await setup();
    const first = await createContact(client, { external_id: "crm-1" });

    const second = await client.post("/contacts", { body: { external_id: "crm-2" } });

    expect(second.status).toBe(201);
    expect(second.body.id).not.toBe(first.id);
    expect(second.body.external_id).toBe("crm-2");
  });

  it("treats external_id as case-sensitive: a differently cased one is a new contact", async () => {
    const { client } = await setup();
    const first = await createContact(client, { external_id: "CRM-1" });

    const second = await client.post("/contacts", { body: { external_id: "crm-1" } });

    expect(second.status).toBe(201);
    expect(second.body.id).not.toBe(first.id);
  });

  it("yields exactly one contact when concurrent creates carry the same external_id", async () => {
    const { org, client } = await setup();

    const responses = await Promise.all(
      Array.from({ length: 8 }, (_, index) =>
        client.post("/contacts", { body: { name: `Racer ${index}`, external_id: "race-1" } }),
      ),
    );

    const statuses = responses.map((response) => response.status).sort();
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
    const ids = new Set(responses.map((response) => response.body.id));
    expect(ids.size).toBe(1);
    expect(await listIds(client, { external_id: "race-1" })).toEqual([...ids]);
    const created = (await eventsOf(org.id)).filter((event) => event.type === "contact.created");
    expect(created).toHaveLength(1);
  });

  it("refuses an unknown body field with 422 naming it", async () => {
    const { client } = await setup();

    const response = await client.post("/contacts", { body: { name: "Ada", nickname: "Countess" } });

    expectValidationError(response, "nickname");
    expect(await listIds(client)).toEqual([]);
  });

  it("refuses an unknown tag id with 404 resource_not_found and stores nothing", async () => {
    const { org, client } = await setup();
    const tag = await createTag(client, "Known");

    const response = await client.post("/contacts", {
      body: { name: "Ada", tags: [tag.id, "tag_01ARZ3NDEKTSV4RRFFQ69G5FAV"] },
    });

    expectError(response, 404, "resource_not_found", "tags.1");
    expect(await listIds(client)).toEqual([]);
    expect(await eventsOf(org.id)).toEqual([]);
  });

  it("names the position of the unknown tag id in the array as given, duplicates included", async () => {
    const { client } = await setup();
    const tag = await createTag(client, "Known");

    const response = await client.post("/contacts", {
      body: { tags: [tag.id, tag.id.toLowerCase(), "tag_01ARZ3NDEKTSV4RRFFQ69G5FAV"] },
    });

    expectError(response, 404, "resource_not_found", "tags.2");
  });

  it("refuses a malformed tag id in the body with 422", async () => {
    const { client } = await setup();

    const response = await client.post("/contacts", { body: { tags: ["vip"] } });

    expectValidationError(response, "tags.0");
  });

  it("refuses an unknown custom field key with 422 naming custom_fields.<key>", async () => {
    const { client } = await setup();
    await createField(client, "known");

    const response = await client.post("/contacts", { body: { custom_fields: { known: "a", favourite_colour: "b" } } });

    expectValidationError(response, "custom_fields.favourite_colour");
    expect(await listIds(client)).toEqual([]);
  });

  it("refuses an organization-scope custom field key in contact custom_fields", async () => {
    const { client } = await setup();
    await createField(client, "company_motto", "organization");

    const response = await client.post("/contacts", { body: { custom_fields: { company_motto: "x" } } });

    expectValidationError(response, "custom_fields.company_motto");
  });

  it("accepts tag ids in lower case and returns them in upper case", async () => {
    const { client } = await setup();
    const tag = await createTag(client, "VIP");

    const created = await client.post("/contacts", { body: { tags: [tag.id.toLowerCase()] } });

    expect(created.status).toBe(201);
    expect(created.body.tags).toEqual([tag.id]);
  });

  it("stores a tag given twice (in two cases) once", async () => {
    const { client } = await setup();
    const tag = await createTag(client, "VIP");

    const created = await client.post("/contacts", { body: { tags: [tag.id, tag.id.toLowerCase()] } });

    expect(created.status).toBe(201);
    expect(created.body.tags).toEqual([tag.id]);
  });

  it("refuses a body that is not valid JSON with 400 invalid_json", async () => {
    const { client } = await setup();

    const response = await client.post("/contacts", {
      rawBody: "{not json",
      headers: { "content-type": "application/json" },
    });

    expectError(response, 400, "invalid_json");
  });
});

interface LimitCase {
  field: string;
  valid: unknown[];
  invalid: { value: unknown }[];
}

function describeValue(value: unknown): string {
  if (typeof value !== "string") return JSON.stringify(value);
  return value.length > 12
    ? `${value.slice(0, 12)}… (${value.length} characters)`
    : `"${value}" (${value.length} characters)`;
}

const limitCases: LimitCase[] = [
  { field: "name", valid: ["a", "n".repeat(160)], invalid: [{ value: "" }, { value: "n".repeat(161) }] },
  { field: "first_name", valid: ["f".repeat(80)], invalid: [{ value: "f".repeat(81) }] },
  { field: "last_name", valid: ["l".repeat(120)], invalid: [{ value: "l".repeat(121) }] },
  {
    field: "email",
    valid: [emailOfLength(254), "x@example.com"],
    invalid: [{ value: emailOfLength(255) }, { value: "not-an-email" }, { value: "a@b" }],
  },
  {
    field: "phone",
    valid: ["1".repeat(8), "2".repeat(32)],
    invalid: [{ value: "1".repeat(7) }, { value: "2".repeat(33) }],
  },
  {
    field: "external_id",
    valid: ["e", "e".repeat(120)],
    invalid: [{ value: "" }, { value: "e".repeat(121) }],
  },
  {
    field: "avatar_url",
    valid: [urlOfLength(500)],
    invalid: [{ value: urlOfLength(501) }, { value: "not a url" }],
  },
  { field: "metadata", valid: [{ a: 1 }], invalid: [{ value: "text" }, { value: [1, 2] }] },
];

describe.each(["POST", "PATCH"] as const)("field limits on %s", (method) => {
  async function send(client: Client, body: Record<string, unknown>) {
    if (method === "POST") return client.post("/contacts", { body });
    const contact = await createContact(client, { name: "Before" });
    return client.patch(`/contacts/${contact.id}`, { body });
  }

  describe.each(limitCases)("$field", ({ field, valid, invalid }) => {
    it.each(valid.map((value) => [describeValue(value), value]))("accepts %s", async (_, value) => {
      const { client } = await setup();

      const response = await send(client, { [field]: value });

      expect(response.status, JSON.stringify(response.body)).toBe(method === "POST" ? 201 : 200);
      expect(response.body[field]).toEqual(value);
    });

    it.each(invalid.map(({ value }) => [describeValue(value), value]))(
      "refuses %s with 422 naming the field",
      async (_, value) => {
        const { client } = await setup();

        const response = await send(client, { [field]: value });

        expectValidationError(response, field);
      },
    );
  });

  it("accepts 50 tags and refuses 51 with 422 naming tags", async () => {
    const { client } = await setup();
    const tags = await Promise.all(Array.from({ length: 51 }, (_, index) => createTag(client, `Tag ${index}`)));
    const ids: string[] = tags.map((tag) => tag.id);

    const tooMany = await send(client, { tags: ids });
    const exactly = await send(client, { tags: ids.slice(0, 50) });

    expectValidationError(tooMany, "tags");
    expect(exactly.status, JSON.stringify(exactly.body)).toBe(method === "POST" ? 201 : 200);
    expect(exactly.body.tags).toHaveLength(50);
    expect(new Set(exactly.body.tags)).toEqual(new Set(ids.slice(0, 50)));
  });

  it("accepts a custom field value of 500 characters and refuses 501 naming custom_fields.<key>", async () => {
    const { client } = await setup();
    await createField(client, "notes");

    const exactly = await send(client, { custom_fields: { notes: "v".repeat(500) } });
    const tooLong = await send(client, { custom_fields: { notes: "v".repeat(501) } });

    expect(exactly.status, JSON.stringify(exactly.body)).toBe(method === "POST" ? 201 : 200);
    expect(exactly.body.custom_fields).toEqual({ notes: "v".repeat(500) });
    expectValidationError(tooLong, "custom_fields.notes");
  });

  it("refuses a custom field value that is not a string", async () => {
    const { client } = await setup();
    await createField(client, "score");

    const response = await send(client, { custom_fields: { score: 5 } });

    expectValidationError(response, "custom_fields.score");
  });

  it("reports every failing field in error.details", async () => {
    const { client } = await setup();

    const response = await send(client, { name: "", phone: "1", email: "nope" });

    expect(response.status).toBe(422);
    expect(response.body.error.code).toBe("validation_error");
    const params = response.body.error.details.map((detail: { param: string }) => detail.param).sort();
    expect(params).toEqual(["email", "name", "phone"]);
  });
});

describe("PATCH /contacts/{contact_id}", () => {
  async function fullContact(client: Client) {
    const vip = await createTag(client, "VIP");
    await createField(client, "plan");
    await createField(client, "region");
    const contact = await createContact(client, {
      name: "Ada Lovelace",
      first_name: "Ada",
      last_name: "Lovelace",
      email: "ada@example.com",
      phone: "+441234567890",
      external_id: "crm-1",
      avatar_url: "https://example.com/ada.png",
      tags: [vip.id],
      custom_fields: { plan: "pro", region: "eu" },
      metadata: { source: "import" },
    });
    return { contact, vip };
  }

  it("clears every nullable field given null and leaves the rest alone", async () => {
    const { client } = await setup();
    const { contact } = await fullContact(client);

    const response = await client.patch(`/contacts/${contact.id}`, {
      body: {
        first_name: null,
        last_name: null,
        email: null,
        phone: null,
        external_id: null,
        avatar_url: null,
      },
    });

    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      ...contact,
      first_name: null,
      last_name: null,
      email: null,
      phone: null,
      external_id: null,
      avatar_url: null,
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect(await getContact(client, contact.id)).toEqual(response.body);
  });

  it("refuses null for name, which is not nullable", async () => {
    const { client } = await setup();
    const { contact } = await fullContact(client);

    const response = await client.patch(`/contacts/${contact.id}`, { body: { name: null } });

    expectValidationError(response, "name");
    expect(await getContact(client, contact.id)).toEqual(contact);
  });

  it("leaves absent fields unchanged and moves updated_at forward", async () => {
    const { client } = await setup();
    const { contact } = await fullContact(client);

    const response = await client.patch(`/contacts/${contact.id}`, { body: { first_name: "Augusta" } });

    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ...contact, first_name: "Augusta", updated_at: response.body.updated_at });
    expect(response.body.created_at).toBe(contact.created_at);
    expect(Date.parse(response.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(contact.updated_at));
  });

  it("replaces the tag set with the given array, and an empty array removes every tag", async () => {
    const { client } = await setup();
    const a = await createTag(client, "A");
    const b = await createTag(client, "B");
    const c = await createTag(client, "C");
    const contact = await createContact(client, { tags: [a.id, b.id] });

    const replaced = await client.patch(`/contacts/${contact.id}`, { body: { tags: [b.id, c.id] } });

    expect(replaced.status).toBe(200);
    expect(replaced.body.tags).toEqual([b.id, c.id]);
    expect((await getContact(client, contact.id)).tags).toEqual([b.id, c.id]);

    const emptied = await client.patch(`/contacts/${contact.id}`, { body: { tags: [] } });

    expect(emptied.status).toBe(200);
    expect(emptied.body.tags).toEqual([]);
    expect((await getContact(client, contact.id)).tags).toEqual([]);
  });

  it("keeps the tags when tags is absent", async () => {
    const { client } = await setup();
    const { contact, vip } = await fullContact(client);

    const response = await client.patch(`/contacts/${contact.id}`, { body: { name: "Renamed" } });

    expect(response.body.tags).toEqual([vip.id]);
  });

  it("clears a custom field given null, sets a given one and keeps an absent one", async () => {
    const { client } = await setup();
    const { contact } = await fullContact(client);
    await createField(client, "tier");

    const response = await client.patch(`/contacts/${contact.id}`, {
      body: { custom_fields: { plan: null, tier: "gold" } },
    });

    expect(response.status).toBe(200);
    expect(response.body.custom_fields).toEqual({ region: "eu", tier: "gold" });
    expect((await getContact(client, contact.id)).custom_fields).toEqual({ region: "eu", tier: "gold" });
  });

  it("replaces the whole metadata object", async () => {
    const { client } = await setup();
    const { contact } = await fullContact(client);

    const response = await client.patch(`/contacts/${contact.id}`, { body: { metadata: { other: true } } });

    expect(response.body.metadata).toEqual({ other: true });
  });

  it("refuses an unknown custom field key with 422 naming custom_fields.<key> and changes nothing", async () => {
    const { client } = await setup();
    const { contact } = await fullContact(client);

    const response = await client.patch(`/contacts/${contact.id}`, {
      body: { name: "Changed", custom_fields: { region: "us", shoe_size: "42" } },
    });

    expectValidationError(response, "custom_fields.shoe_size");
    expect(await getContact(client, contact.id)).toEqual(contact);
  });

  it("refuses an external_id taken by another contact with 409 resource_already_exists", async () => {
    const { client } = await setup();
    await createContact(client, { external_id: "taken" });
    const contact = await createContact(client, { name: "Mine", external_id: "mine" });

    const response = await client.patch(`/contacts/${contact.id}`, { body: { name: "Changed", external_id: "taken" } });

    expectError(response, 409, "resource_already_exists", "external_id");
    expect(await getContact(client, contact.id)).toEqual(contact);
  });

  it("accepts the contact's own external_id again", async () => {
    const { client } = await setup();
    const contact = await createContact(client, { external_id: "mine" });

    const response = await client.patch(`/contacts/${contact.id}`, { body: { external_id: "mine", name: "Me" } });

    expect(response.status).toBe(200);
    expect(response.body.external_id).toBe("mine");
  });

  it("refuses an unknown tag id with 404 resource_not_found and changes nothing", async () => {
    const { org, client } = await setup();
    const { contact } = await fullContact(client);
    const before = await eventsOf(org.id);

    const response = await client.patch(`/contacts/${contact.id}`, {
      body: { name: "Changed", tags: ["tag_01ARZ3NDEKTSV4RRFFQ69G5FAV"] },
    });

    expectError(response, 404, "resource_not_found", "tags.0");
    expect(await getContact(client, contact.id)).toEqual(contact);
    expect(await eventsOf(org.id)).toEqual(before);
  });

  it("refuses an unknown body field with 422", async () => {
    const { client } = await setup();
    const contact = await createContact(client);

    const response = await client.patch(`/contacts/${contact.id}`, { body: { id: "cnt_01ARZ3NDEKTSV4RRFFQ69G5FAV" } });

    expectValidationError(response, "id");
  });

  it("answers 404 resource_not_found for an unknown contact", async () => {
    const { client } = await setup();

    const response = await client.patch("/contacts/cnt_01ARZ3NDEKTSV4RRFFQ69G5FAV", { body: { name: "X" } });

    expectError(response, 404, "resource_not_found");
  });

  it("accepts lower-case tag ids", async () => {
    const { client } = await setup();
    const tag = await createTag(client, "VIP");
    const contact = await createContact(client);

    const response = await client.patch(`/contacts/${contact.id}`, { body: { tags: [tag.id.toLowerCase()] } });

    expect(response.status).toBe(200);
    expect(response.body.tags).toEqual([tag.id]);
  });
});

describe("DELETE /contacts/{contact_id}", () => {
  it("answers 200 with the Deleted object, after which GET is 404", async () => {
    const { client } = await setup();
    const contact = await createContact(client, { name: "Gone soon" });
    const kept = await createContact(client, { name: "Kept" });

    const response = await client.delete(`/contacts/${contact.id}`);

    expect(response.status).toBe(200);
    expect(response.body).toEqual({ object: "contact", id: contact.id, deleted: true });
    expectError(await client.get(`/contacts/${contact.id}`), 404, "resource_not_found");
    expectError(await client.delete(`/contacts/${contact.id}`), 404, "resource_not_found");
    expect(await listIds(client)).toEqual([kept.id]);
  });

  it("frees the external_id for a new contact", async () => {
    const { client } = await setup();
    const contact = await createContact(client, { external_id: "reused" });
    await client.delete(`/contacts/${contact.id}`);

    const again = await client.post("/contacts", { body: { external_id: "reused" } });

    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(contact.id);
  });
});

describe("GET /contacts/{contact_id}", () => {
  it("answers 404 resource_not_found for an unknown or malformed id", async () => {
    const { client } = await setup();

    expectError(await client.get("/contacts/cnt_01ARZ3NDEKTSV4RRFFQ69G5FAV"), 404, "resource_not_found");
    expectError(await client.get("/contacts/not-an-id"), 404, "resource_not_found");
  });
});

describe("GET /contacts", () => {
  it("lists newest first and pages with a cursor", async () => {
    const { client } = await setup();
    const first = await createContact(client, { name: "First" });
    const second = await createContact(client, { name: "Second" });
    const third = await createContact(client, { name: "Third" });

    const page = await client.get("/contacts", { query: { limit: 2 } });

    expect(page.status).toBe(200);
    expect(page.body.object).toBe("list");
    expect(page.body.data.map((contact: { id: string }) => contact.id)).toEqual([third.id, second.id]);
    expect(page.body.pagination).toEqual({ has_more: true, next_cursor: expect.any(String) });
    const next = await client.get("/contacts", { query: { limit: 2, after: page.body.pagination.next_cursor } });
    expect(next.body.data).toEqual([first]);
    expect(next.body.pagination).toEqual({ has_more: false, next_cursor: null });
    const all = await walkList(client, "/contacts", { limit: 1 });
    expect(all.map((contact) => contact.id)).toEqual([third.id, second.id, first.id]);
  });

  it("returns contacts with their tags and custom fields, as GET does", async () => {
    const { client } = await setup();
    const tag = await createTag(client, "VIP");
    await createField(client, "plan");
    const contact = await createContact(client, { tags: [tag.id], custom_fields: { plan: "pro" } });

    const list = await client.get("/contacts");

    expect(list.body.data).toEqual([await getContact(client, contact.id)]);
  });

  it("filters by email, exactly and case-insensitively", async () => {
    const { client } = await setup();
    const ada = await createContact(client, { email: "Ada@Example.com" });
    await createContact(client, { email: "ada@example.com.au" });
    await createContact(client, { email: "bob@example.com" });

    expect(await listIds(client, { email: "ADA@example.COM" })).toEqual([ada.id]);
    expect(await listIds(client, { email: "ada@example" })).toEqual([]);
  });

  it("filters by exact phone", async () => {
    const { client } = await setup();
    const short = await createContact(client, { phone: "+4912345678" });
    await createContact(client, { phone: "+49123456789" });

    expect(await listIds(client, { phone: "+4912345678" })).toEqual([short.id]);
  });

  it("filters by exact external_id", async () => {
    const { client } = await setup();
    const one = await createContact(client, { external_id: "crm-1" });
    await createContact(client, { external_id: "crm-10" });

    expect(await listIds(client, { external_id: "crm-1" })).toEqual([one.id]);
  });

  it("searches query as a case-insensitive substring of name, email, phone and external_id", async () => {
    const { client } = await setup();
    const byName = await createContact(client, { name: "Ada Lovelace" });
    const byEmail = await createContact(client, { email: "grace@navy.example" });
    const byPhone = await createContact(client, { phone: "+15550001111" });
    const byExternalId = await createContact(client, { external_id: "crm-XYZ-42" });
    await createContact(client, { name: "Somebody else", first_name: "Lovelace" });

    expect(await listIds(client, { query: "LOVE" })).toEqual([byName.id]);
    expect(await listIds(client, { query: "navy" })).toEqual([byEmail.id]);
    expect(await listIds(client, { query: "0001" })).toEqual([byPhone.id]);
    expect(await listIds(client, { query: "xyz-4" })).toEqual([byExternalId.id]);
    expect(await listIds(client, { query: "nothing matches this" })).toEqual([]);
  });

  it("treats % and _ in query as literal characters", async () => {
    const { client } = await setup();
    const percent = await createContact(client, { name: "100% real" });
    await createContact(client, { name: "100 real" });
    const underscore = await createContact(client, { name: "a_b" });
    await createContact(client, { name: "axb" });
    const backslash = await createContact(client, { name: "c\\d" });
    await createContact(client, { name: "cd" });

    expect(await listIds(client, { query: "100%" })).toEqual([percent.id]);
    expect(await listIds(client, { query: "a_b" })).toEqual([underscore.id]);
    expect(await listIds(client, { query: "c\\d" })).toEqual([backslash.id]);
    expect(await listIds(client, { query: "%" })).toEqual([percent.id]);
  });

  it("filters by tag_id, given in either case", async () => {
    const { client } = await setup();
    const vip = await createTag(client, "VIP");
    const lead = await createTag(client, "Lead");
    const tagged = await createContact(client, { tags: [vip.id, lead.id] });
    await createContact(client, { tags: [lead.id] });
    await createContact(client);

    expect(await listIds(client, { tag_id: vip.id })).toEqual([tagged.id]);
    expect(await listIds(client, { tag_id: vip.id.toLowerCase() })).toEqual([tagged.id]);
    expect(await listIds(client, { tag_id: "tag_01ARZ3NDEKTSV4RRFFQ69G5FAV" })).toEqual([]);
  });

  it("refuses a malformed tag_id with 422 naming tag_id", async () => {
    const { client } = await setup();

    expectValidationError(await client.get("/contacts", { query: { tag_id: "vip" } }), "tag_id");
    expectValidationError(
      await client.get("/contacts", { query: { tag_id: "cnt_01ARZ3NDEKTSV4RRFFQ69G5FAV" } }),
      "tag_id",
    );
  });

  it("filters by created_after and created_before", async () => {
    const { client } = await setup();
    const old = await createContact(client, { name: "2020" });
    const middle = await createContact(client, { name: "2021" });
    const recent = await createContact(client, { name: "2022" });
    const stamps: [string, string][] = [
      [old.id, "2020-01-01T00:00:00.000Z"],
      [middle.id, "2021-01-01T00:00:00.000Z"],
      [recent.id, "2022-01-01T00:00:00.000Z"],
    ];
    for (const [id, at] of stamps) await api.client.sql`update contacts set created_at = ${at} where id = ${id}`;

    expect(await listIds(client, { created_after: "2020-06-01T00:00:00Z" })).toEqual([recent.id, middle.id]);
    expect(await listIds(client, { created_before: "2021-06-01T00:00:00.000Z" })).toEqual([middle.id, old.id]);
    expect(
      await listIds(client, { created_after: "2020-06-01T00:00:00+02:00", created_before: "2021-06-01T00:00:00Z" }),
    ).toEqual([middle.id]);
  });

  it("combines filters", async () => {
    const { client } = await setup();
    const tag = await createTag(client, "VIP");
    const both = await createContact(client, { name: "Ada", tags: [tag.id] });
    await createContact(client, { name: "Ada" });
    await createContact(client, { name: "Bob", tags: [tag.id] });

    expect(await listIds(client, { query: "ada", tag_id: tag.id })).toEqual([both.id]);
  });

  it.each([
    ["created_after", "yesterday"],
    ["created_before", "2021-13-01T00:00:00Z"],
    ["email", "e".repeat(255)],
    ["phone", "1".repeat(33)],
    ["external_id", ""],
    ["external_id", "e".repeat(121)],
    ["query", "q".repeat(121)],
    ["limit", "0"],
    ["limit", "101"],
    ["colour", "red"],
  ])("refuses %s=%s with 422 naming it", async (param, value) => {
    const { client } = await setup();

    expectValidationError(await client.get("/contacts", { query: { [param]: value } }), param);
  });

  it("accepts query filters at their length limits", async () => {
    const { client } = await setup();

    for (const query of [{ email: "e".repeat(254) }, { phone: "1".repeat(32) }, { query: "q".repeat(120) }]) {
      const response = await client.get("/contacts", { query });
      expect(response.status, JSON.stringify(query)).toBe(200);
    }
  });
});

describe("isolation", () => {
  async function expectInvisible(client: Client, contactId: string) {
    expectError(await client.get(`/contacts/${contactId}`), 404, "resource_not_found");
    expectError(await client.patch(`/contacts/${contactId}`, { body: { name: "Hijack" } }), 404, "resource_not_found");
    expectError(await client.delete(`/contacts/${contactId}`), 404, "resource_not_found");
    expect(await listIds(client)).not.toContain(contactId);
  }

  it("hides a contact of another organization from GET, PATCH, DELETE and lists", async () => {
    const owner = await setup();
    const other = await setup();
    const contact = await createContact(owner.client, { name: "Private", external_id: "shared-id" });
    await createContact(other.client, { name: "Theirs" });

    await expectInvisible(other.client, contact.id);
    expect(await getContact(owner.client, contact.id)).toEqual(contact);
  });

  it("hides a test contact from the live key of the same organization, and the other way round", async () => {
    const { client, live } = await setup();
    const testContact = await createContact(client, { name: "Sandbox" });
    const liveContact = await createContact(live, { name: "Real" });

    await expectInvisible(live, testContact.id);
    await expectInvisible(client, liveContact.id);
    expect(await getContact(client, testContact.id)).toEqual(testContact);
    expect(await getContact(live, liveContact.id)).toEqual(liveContact);
  });

  it("finds-or-creates on external_id within the key's own environment only", async () => {
    const { client, live } = await setup();
    const testContact = await createContact(client, { external_id: "crm-1" });

    const liveResponse = await live.post("/contacts", { body: { external_id: "crm-1" } });

    expect(liveResponse.status).toBe(201);
    expect(liveResponse.body.id).not.toBe(testContact.id);
  });

  it("lets a PATCH take an external_id that only a contact of the other environment has", async () => {
    const { client, live } = await setup();
    await createContact(live, { external_id: "crm-1" });
    const contact = await createContact(client, { external_id: "crm-2" });

    const response = await client.patch(`/contacts/${contact.id}`, { body: { external_id: "crm-1" } });

    expect(response.status).toBe(200);
    expect(response.body.external_id).toBe("crm-1");
  });

  it("finds-or-creates on external_id within the key's own organization only", async () => {
    const owner = await setup();
    const other = await setup();
    const contact = await createContact(owner.client, { external_id: "crm-1" });

    const response = await other.client.post("/contacts", { body: { external_id: "crm-1" } });

    expect(response.status).toBe(201);
    expect(response.body.id).not.toBe(contact.id);
  });

  it("refuses a tag of the other environment or organization with 404", async () => {
    const { client, live } = await setup();
    const other = await setup();
    const liveTag = await createTag(live, "Live only");
    const foreignTag = await createTag(other.client, "Foreign");
    const contact = await createContact(client);

    expectError(await client.post("/contacts", { body: { tags: [liveTag.id] } }), 404, "resource_not_found");
    expectError(await client.post("/contacts", { body: { tags: [foreignTag.id] } }), 404, "resource_not_found");
    expectError(
      await client.patch(`/contacts/${contact.id}`, { body: { tags: [liveTag.id] } }),
      404,
      "resource_not_found",
    );
  });

  it("refuses a custom field of the other environment or organization with 422", async () => {
    const { client, live } = await setup();
    const other = await setup();
    await createField(live, "live_only");
    await createField(other.client, "foreign");

    expectValidationError(
      await client.post("/contacts", { body: { custom_fields: { live_only: "x" } } }),
      "custom_fields.live_only",
    );
    expectValidationError(
      await client.post("/contacts", { body: { custom_fields: { foreign: "x" } } }),
      "custom_fields.foreign",
    );
  });

  it("does not list a contact of another organization when filtering by its tag", async () => {
    const owner = await setup();
    const other = await setup();
    const tag = await createTag(owner.client, "VIP");
    await createContact(owner.client, { tags: [tag.id] });

    expect(await listIds(other.client, { tag_id: tag.id })).toEqual([]);
  });
});

describe("events", () => {
  it("records contact.created and tag.added with data.contact equal to what GET returns", async () => {
    const { org, client } = await setup();
    const vip = await createTag(client, "VIP");
    const lead = await createTag(client, "Lead");
    await createField(client, "plan");

    const contact = await createContact(client, {
      name: "Ada",
      external_id: "crm-1",
      tags: [vip.id, lead.id],
      custom_fields: { plan: "pro" },
    });

    const fetched = await getContact(client, contact.id);
    const events = await eventsOf(org.id);
    expect(events.map((event) => event.type)).toEqual(["contact.created", "tag.added", "tag.added"]);
    expect(events[0]?.data).toEqual({ contact: fetched });
    expect(events[1]?.data).toEqual({ tag: vip, contact: fetched });
    expect(events[2]?.data).toEqual({ tag: lead, contact: fetched });
    expect(events.every((event) => event.environment === "test" && /^evt_/.test(event.id))).toBe(true);
  });

  it("records contact.updated, tag.added and tag.removed for a PATCH that changes tags", async () => {
    const { org, client } = await setup();
    const a = await createTag(client, "A");
    const b = await createTag(client, "B");
    const c = await createTag(client, "C");
    const contact = await createContact(client, { tags: [a.id, b.id] });
    const before = (await eventsOf(org.id)).length;

    await client.patch(`/contacts/${contact.id}`, { body: { name: "Renamed", tags: [b.id, c.id] } });

    const fetched = await getContact(client, contact.id);
    const events = (await eventsOf(org.id)).slice(before);
    expect(events.map((event) => event.type)).toEqual(["contact.updated", "tag.added", "tag.removed"]);
    expect(events[0]?.data).toEqual({ contact: fetched });
    expect(events[1]?.data).toEqual({ tag: c, contact: fetched });
    expect(events[2]?.data).toEqual({ tag: a, contact: fetched });
  });

  it("records only contact.updated when the tag set does not change", async () => {
    const { org, client } = await setup();
    const a = await createTag(client, "A");
    const contact = await createContact(client, { tags: [a.id] });
    const before = (await eventsOf(org.id)).length;

    await client.patch(`/contacts/${contact.id}`, { body: { tags: [a.id], first_name: "Ada" } });

    const events = (await eventsOf(org.id)).slice(before);
    expect(events.map((event) => event.type)).toEqual(["contact.updated"]);
    expect(events[0]?.data).toEqual({ contact: await getContact(client, contact.id) });
  });

  it("records no event for a refused create or update", async () => {
    const { org, client } = await setup();
    const contact = await createContact(client, { external_id: "one" });
    await createContact(client, { external_id: "two" });
    const before = await eventsOf(org.id);

    await client.post("/contacts", { body: { name: "" } });
    await client.patch(`/contacts/${contact.id}`, { body: { external_id: "two" } });
    await client.patch(`/contacts/${contact.id}`, { body: { custom_fields: { missing: "x" } } });

    expect(await eventsOf(org.id)).toEqual(before);
  });

  it("records events in the key's environment", async () => {
    const { org, live } = await setup();

    const contact = await createContact(live, { name: "Real" });

    const liveEvents = await eventsOf(org.id, "live");
    expect(liveEvents.map((event) => event.type)).toEqual(["contact.created"]);
    expect(liveEvents[0]?.data).toEqual({ contact });
    expect(await eventsOf(org.id, "test")).toEqual([]);
  });
});
